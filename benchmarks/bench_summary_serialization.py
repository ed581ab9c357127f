"""Reading and writing summary.json with pydantic v2 (what the project uses), msgspec and cattrs.

The summary is that of `bench_report_10k.py`'s 10,000 records (`--records`), computed once.
The same schema is given to msgspec (Structs) and to cattrs (attrs classes), each generated from
the pydantic models' fields, so the three parse and write the same document into the same
shape: parse = the file's text into typed objects, dump = typed objects into the file's text
(two-space indent, keys sorted, as summary.json is written). Best of `--repeat` rounds of
`--number` calls each, in milliseconds per call.

msgspec and cattrs are not dependencies of the project: install them beside it to run this,
e.g. `pip install --target /tmp/benchlibs msgspec cattrs` and PYTHONPATH=.:/tmp/benchlibs.
Run: python benchmarks/bench_summary_serialization.py [--records N] [--repeat K] [--number M]
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from pydantic import BaseModel  # noqa: E402

from bench_report_10k import newest_results, varied_records  # noqa: E402
from swe_residual.metrics.summary.aggregate import summarize  # noqa: E402
from swe_residual.metrics.summary.model import Summary, summary_text  # noqa: E402
from swe_residual.trial.records import read_record  # noqa: E402

Make = Callable[[type[BaseModel]], Any]


def plain_type(annotation: Any, make: Make) -> Any:
    """A pydantic field's type for another library: a part by `make`'s class, the rest as it is."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return plain_type(get_args(annotation)[0], make)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return make(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        return Union[tuple(plain_type(arg, make) for arg in get_args(annotation))]
    if origin in (Mapping, dict):
        key, value = get_args(annotation)
        return dict[key, plain_type(value, make)]  # type: ignore[valid-type]
    if origin is tuple:
        args = get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple[plain_type(args[0], make), ...]  # type: ignore[misc]
        return tuple[tuple(plain_type(arg, make) for arg in args)]  # type: ignore[misc]
    return annotation


def fields_of(model: type[BaseModel], make: Make) -> list[tuple[str, Any, Any]]:
    """(key in the file, type, default) of every field and computed field of `model`."""
    out = []
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = None
        out.append((info.alias or name, plain_type(info.annotation, make), default))
    for name, computed in model.model_computed_fields.items():
        out.append((name, plain_type(computed.return_type, make), None))
    return out


def msgspec_classes(root: type[BaseModel]) -> Any:
    import msgspec

    made: dict[type[BaseModel], Any] = {}

    def make(model: type[BaseModel]) -> Any:
        if model not in made:
            fields = []
            for key, tp, default in fields_of(model, make):
                default = msgspec.field(default_factory=type(default)) if isinstance(default, (dict, list)) else default
                fields.append((key, tp | None if default is None else tp, default))
            made[model] = msgspec.defstruct(model.__name__, fields, omit_defaults=True, frozen=True)
        return made[model]

    return make(root)


def attrs_classes(root: type[BaseModel]) -> Any:
    import attrs

    made: dict[type[BaseModel], Any] = {}

    def make(model: type[BaseModel]) -> Any:
        if model not in made:
            attributes = {}
            for key, tp, default in fields_of(model, make):
                if isinstance(default, (dict, list)):
                    attributes[key] = attrs.field(type=tp, factory=type(default))
                else:
                    attributes[key] = attrs.field(type=tp | None if default is None else tp, default=default)
            made[model] = attrs.make_class(model.__name__, attributes, frozen=True)
        return made[model]

    return make(root)


def best(call: Callable[[], Any], repeat: int, number: int) -> float:
    """Milliseconds per call, the best of `repeat` rounds."""
    return 1000 * min(timeit.repeat(call, repeat=repeat, number=number)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=20)
    args = parser.parse_args()
    source_path = args.results or newest_results()
    source = [json.loads(line) for line in source_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    summary = summarize([read_record(r) for r in varied_records(source, args.records)], compare=True)
    text = summary_text(summary)
    print(f"summary.json of {args.records} records: {len(text)} bytes; ms per call, best of {args.repeat}")
    rows: list[tuple[str, float, float]] = []

    rows.append(("pydantic v2 (project)", best(lambda: Summary.model_validate_json(text), args.repeat, args.number),
                 best(lambda: summary_text(summary), args.repeat, args.number)))

    import msgspec

    struct = msgspec_classes(Summary)
    typed = msgspec.json.decode(text, type=struct)
    decoder, encoder = msgspec.json.Decoder(struct), msgspec.json.Encoder(order="sorted")
    rows.append(("msgspec", best(lambda: decoder.decode(text), args.repeat, args.number),
                 best(lambda: msgspec.json.format(encoder.encode(typed), indent=2), args.repeat, args.number)))

    import cattrs.preconf.json

    cls = attrs_classes(Summary)
    converter = cattrs.preconf.json.make_converter()
    loaded = converter.structure(json.loads(text), cls)
    rows.append(("cattrs (attrs)", best(lambda: converter.structure(json.loads(text), cls), args.repeat, args.number),
                 best(lambda: json.dumps(converter.unstructure(loaded), indent=2, sort_keys=True, ensure_ascii=True),
                      args.repeat, args.number)))
    print(f"{'library':<24}{'parse':>10}{'dump':>10}")
    for name, parse, dump in rows:
        print(f"{name:<24}{parse:>10.2f}{dump:>10.2f}")


if __name__ == "__main__":
    main()
