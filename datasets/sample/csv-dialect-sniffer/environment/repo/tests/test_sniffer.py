from csvsniff import sniff, sniff_delimiter


def test_comma_file():
    d = sniff("a,b,c\n1,2,3\n4,5,6\n")
    assert d.delimiter == ","
    assert d.has_header


def test_tab_file():
    assert sniff_delimiter("x\ty\n1\t2\n") == "\t"


def test_no_header_when_all_numeric():
    assert not sniff("1;2\n3;4\n").has_header
