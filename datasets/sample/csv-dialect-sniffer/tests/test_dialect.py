import pytest

from csvsniff import SniffError, sniff, sniff_delimiter
from csvsniff.cli import main


def test_simple_comma():
    d = sniff("name,age\nann,31\nbob,42\n")
    assert (d.delimiter, d.quotechar, d.has_header) == (",", '"', True)


def test_tab_delimited():
    assert sniff("id\tscore\n1\t9.5\n2\t7.0\n").delimiter == "\t"


def test_pipe_delimited():
    assert sniff_delimiter("a|b|c\n1|2|3\n") == "|"


def test_semicolon_with_quoted_commas():
    text = '"id";"label, long"\n"1";"red, dark"\n"2";"blue, light"\n'
    d = sniff(text)
    assert d.delimiter == ";"
    assert d.quotechar == '"'


def test_doubled_quotes_inside_field():
    text = '"title, short";"year"\n"The ""Best, Ever"" Show";"1999"\n"Plain, Simple";"2001"\n'
    assert sniff(text).delimiter == ";"


def test_single_quote_quotechar():
    text = "'city, country';'pop'\n'Paris, FR';'2100000'\n'Rome, IT';'2800000'\n"
    d = sniff(text)
    assert d.quotechar == "'"
    assert d.delimiter == ";"
    assert d.has_header


def test_header_detection():
    assert sniff("product|price\ntea|2.50\ncoffee|3.10\n").has_header
    assert not sniff("tea|coffee\nmilk|sugar\n").has_header


def test_no_delimiter_raises():
    with pytest.raises(SniffError):
        sniff("justoneword\nanother\n")
    with pytest.raises(SniffError):
        sniff("")


def test_cli_prints_dialect(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("k\tv\na\t1\n", encoding="utf-8")
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["delimiter: \\t", 'quotechar: "', "header: yes"]


def test_cli_quotechar_override(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    assert main([str(path), "--quotechar", "'"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "delimiter: ,"
    assert out[1] == "quotechar: '"
