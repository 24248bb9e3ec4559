"""What the docs and ``--help`` show is what the software does, checked where it takes no long run (issue 48).

- every replay table in README.md and docs/ has the columns ``transfer replay`` prints, aligned as it aligns them,
  and README's demo sample is the demo's command with both of its tables;
- docs/diagnose.md's worked case counts the replays and ranks the factors its registry gives for that command;
- every perturbation kind and every diagnose factor the registries hold has its row in the docs' tables;
- every command's ``--help`` has examples that parse and pass the command line's checks from the repository root,
  and names a page of docs/ that exists; a flag whose help says its default gets no second one from tyro.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import typing
from pathlib import Path

import docstring_parser
import pytest
import tyro

from tests.docs_commands import ROOT, page_text
from transfer._console import aligned
from transfer.cli import _commands, main
from transfer.cli._checks import UsageError, check_command
from transfer.cli._help import _joined, examples, subcommand_union
from transfer.cli.replay import COLUMNS, CONTROL_COLUMNS
from transfer.env.perturbations import PERTURBATIONS
from transfer.runs.diagnose import FACTORS

PAGES = {"README.md": (ROOT / "README.md").read_text()} | {
    f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))
}
TITLES = {"order fed": [t for t, _, _ in COLUMNS], "track rad": [t for t, _, _ in CONTROL_COLUMNS]}
"""A replay table by a title only it has: its header's titles, in order."""


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def replay_tables(text: str) -> list[list[str]]:
    """Every replay table of a page (its header and the rows under it with as many cells), as its lines."""
    lines, tables = text.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("run ") and any(key in line for key in TITLES):
            width = len(_cells(line))
            end = i + 1
            while end < len(lines) and lines[end].strip() and len(_cells(lines[end])) == width:
                end += 1
            tables.append(lines[i:end])
    return tables


SAMPLES = [(page, table) for page, text in PAGES.items() for table in replay_tables(text)]


def test_the_pages_have_replay_tables():
    assert len(SAMPLES) >= 8 and {page for page, _ in SAMPLES} >= {"README.md", "docs/replay.md", "docs/mujoco.md"}


@pytest.mark.parametrize("page,table", SAMPLES, ids=[f"{page}-{i}" for i, (page, _) in enumerate(SAMPLES)])
def test_a_replay_table_has_the_printed_columns_and_alignment(page, table):
    key = next(k for k in TITLES if k in table[0])
    assert _cells(table[0]) == TITLES[key], f"{page}: transfer replay prints the columns {TITLES[key]}"
    assert len(table) >= 2, f"{page}: a header with no row under it"
    assert aligned([_cells(line) for line in table], left=2) == table, f"{page}: not as print_table aligns it"


def _block_after(text: str, marker: str) -> str:
    """The first fenced block after ``marker``."""
    rest = text[text.index(marker) :]
    start = rest.index("```\n") + 4
    return rest[start : rest.index("```", start)]


def test_the_readme_demo_sample_is_the_demos_command_and_both_tables():
    readme, run_sh = PAGES["README.md"], (ROOT / "run.sh").read_text()
    demo = re.search(r'exec "\$VENV/bin/transfer" (replay .*?)"\$@"', run_sh, re.S).group(1)
    demo = " ".join(demo.replace("\\\n", " ").split())
    said = " ".join(readme[readme.index("it runs `transfer ") + len("it runs `transfer ") :].split("`")[0].split())
    assert said == demo, "README's demo command is not run.sh's"
    sample = _block_after(readme, "It prints")
    tables = replay_tables(sample)
    assert [_cells(t[0]) for t in tables] == [TITLES["order fed"], TITLES["track rad"]]
    assert [_cells(line)[0] for line in tables[0][1:]] == ["native (physx)", "reordered (newton)", "naive (newton)"]
    assert "prints one table" not in readme and "fell: naive (newton):" in sample
    assert "plot: out/demo-replay.png" in sample


def _documented_diagnosis() -> tuple[list[str], str]:
    text = page_text("diagnose.md")
    section = text[text.index("## One case") : text.index("## A drift")]
    (command,) = re.findall(r"^\$ transfer (diagnose .+)$", section, re.M)
    return shlex.split(command), section


def test_the_diagnose_case_counts_the_replays_and_ranks_the_factors_its_registry_gives(monkeypatch):
    """docs/diagnose.md's worked case: ``N replays`` is the native, target and open-loop runs plus one per candidate
    value, and the ranking lists every factor that has a value to try there (the registry, not a long run)."""
    pytest.importorskip("pxr")
    from transfer.cli.replay import parse_perturbations, parse_settings
    from transfer.env.perturbations import Perturbation
    from transfer.runs.diagnose import candidates
    from transfer.runs.inputs import resolve_inputs

    args, section = _documented_diagnosis()
    monkeypatch.chdir(ROOT)
    cmd = tyro.cli(subcommand_union(_commands()[0], args), args=args)
    inputs = resolve_inputs(cmd.checkpoint, source=cmd.source, config=cmd.config, asset=cmd.asset)
    target = inputs.task.with_settings(parse_settings(cmd.settings), where="--set")
    perturbation = dict(Perturbation.from_dict(parse_perturbations(cmd.perturb) or {}))
    plan = candidates(inputs.task, target, cmd.target, perturbation, tuple(cmd.factor) or None)
    (said,) = re.findall(r"(\d+) replays, native, target and open loop included", section)
    assert int(said) == 3 + len(plan)
    sample = section[section.index("$ transfer diagnose") :].split("```")[0]
    rows = re.findall(r"^\d+\s+(\w+)\s{2,}", sample, re.M)
    assert len(rows) == len(set(rows)) and set(rows) == {c.factor for c in plan}, "not the registry's factors"


def _table_names(page: str, heading: str) -> list[str]:
    """The backquoted first cells of the table that follows ``heading`` on ``docs/<page>``."""
    text = page_text(page)
    rest = text[text.index(heading) :]
    table = re.search(r"(?:^\|.*\n)+", rest, re.M).group(0)
    return re.findall(r"^\| `(\w+)` \|", table, re.M)


def test_every_perturbation_kind_has_its_row_in_the_sweep_docs():
    assert _table_names("sweep.md", "### Perturbations") == list(PERTURBATIONS)


def test_every_diagnose_factor_has_its_row_in_the_diagnose_docs():
    assert _table_names("diagnose.md", "## The factors and their ranges") == list(FACTORS)


# ------------------------------------------------------------------------------------------------------- --help

COMMANDS = {name: typing.get_args(annotated)[0] for name, annotated in _commands()[0].items()}
EXAMPLES = [(name, line) for name, cls in COMMANDS.items() for line in examples(cls)]


def test_every_command_has_examples_and_its_page():
    for name, cls in COMMANDS.items():
        assert len(examples(cls)) >= 2, f"transfer {name} --help: two or three examples"
        assert any(line.startswith(f"transfer {name} ") for line in examples(cls)), name
        pages = re.findall(r"\bdocs/(\w+\.md)", cls.__doc__ or "")
        assert pages and all((ROOT / "docs" / p).is_file() for p in pages), (name, pages)


def _written_before(name: str, earlier: list[str]) -> bool:
    """``name`` is what an earlier example writes: its file, a file in its folder, or a --record trace of it."""
    for token in earlier:
        stem = token.removesuffix(".parquet")
        if name == token or name.startswith(token.rstrip("/") + "/") or (stem != token and name.startswith(stem + ".")):
            return True
    return False


@pytest.mark.parametrize("name,line", EXAMPLES, ids=[f"{n}{i}" for i, (n, _) in enumerate(EXAMPLES)])
def test_a_help_example_parses_and_passes_the_checks_from_the_root(name, line, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = shlex.split(line)[1:]
    cmd = tyro.cli(subcommand_union(_commands()[0], args), args=args)
    earlier = [
        t for other in examples(COMMANDS[name])[: examples(COMMANDS[name]).index(line)] for t in shlex.split(other)
    ]
    try:
        check_command(cmd, args)
    except UsageError as exc:
        missing = [t for t in args if t in str(exc)]
        assert missing and all(_written_before(t, earlier) for t in missing), f"{line}: {exc}"


DEFAULT_SAID = re.compile(r"\bdefault\s*:", re.IGNORECASE)


def _field_help(cls: type) -> dict[str, tuple[str, typing.Any]]:
    """Each field's help text (tyro's ``help=`` or its docstring) and its merged tyro ``help_behavior_hint``;
    repeatable flags aside."""
    hints = typing.get_type_hints(cls, include_extras=True)
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__[:-1]):
        docs |= {p.arg_name: p.description or "" for p in docstring_parser.parse_from_object(base).params}
    append = typing.get_args(tyro.conf.UseAppendAction[int])[1]
    out = {}
    for field in dataclasses.fields(cls):
        metadata = getattr(hints[field.name], "__metadata__", ())
        if append in metadata:  # tyro says "(repeatable)" there, no default
            continue
        configs = [m for m in metadata if hasattr(m, "help_behavior_hint")]
        text = next((c.help for c in reversed(configs) if c.help), None) or docs.get(field.name, "")
        hint = next((c.help_behavior_hint for c in reversed(configs) if c.help_behavior_hint is not None), None)
        out[field.name] = (text, hint)
    return out


def test_a_flag_whose_help_says_its_default_gets_no_second_one():
    twice = [
        f"{name} --{field}"
        for name, cls in COMMANDS.items()
        for field, (text, hint) in _field_help(cls).items()
        if DEFAULT_SAID.search(text) and hint is None
    ]
    assert twice == [], "mark them DEFAULT_IN_TEXT (transfer/cli/_help.py)"
    assert "(required)" not in " ".join(t for cls in COMMANDS.values() for t, _ in _field_help(cls).values())


def _help(args: list[str], capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as ended:
        main(args)
    assert ended.value.code == 0
    return re.sub(r"[│╭╮╰╯─\s]+", " ", capsys.readouterr().out)


def test_replay_help_reads_as_documented(capsys, monkeypatch):
    text = _help(["replay", "--help"], capsys, monkeypatch)
    assert (
        "(default: the checkpoint's metadata). (default" not in text and "(default: the checkpoint's metadata)" in text
    )
    assert "one table" not in text and "docs/replay.md" in text
    assert "transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target newton" in text


def test_wrapped_docstring_lines_join_and_examples_keep_their_lines():
    """tyro kept every source line break of a flag's help (its continuation lines start indented): joined now."""
    field = "The order: physx, or a file listing its joint\n    names (default: the metadata)."
    assert _joined(field) == "The order: physx, or a file listing its joint names (default: the metadata)."
    command = "Run it.\n\nExamples:\n  transfer a --b\n  transfer c\n\nRead docs/x.md\n(the page)."
    assert _joined(command) == "Run it.\n\nExamples:\n  transfer a --b\n  transfer c\n\nRead docs/x.md (the page)."


def test_the_command_list_shows_each_commands_first_paragraph(capsys, monkeypatch):
    text = _help(["--help"], capsys, monkeypatch)
    assert all(f" {name} " in text for name in COMMANDS)
    assert "Examples" not in text and "transfer COMMAND --help" in text


def test_no_example_writes_into_a_folder_a_fresh_clone_lacks():
    """Output files go where they can be written on a fresh clone: the repository root or a folder the command
    creates (``-o DIR`` of train and sweep), not ``out/``, which only the demo creates."""
    for name, line in EXAMPLES:
        args = shlex.split(line)
        for flag in ("--plot", "--record"):
            if flag in args:
                assert "/" not in args[args.index(flag) + 1], line
        if name not in ("train", "sweep") and "-o" in args and args[1] not in ("train", "sweep"):
            assert Path(args[args.index("-o") + 1]).parent == Path("."), line


def test_the_sweep_example_spec_needs_only_the_project():
    """``transfer sweep --help``'s spec: the project's quadruped policy, 4 cells, nothing from ../shared."""
    pytest.importorskip("pxr")
    from transfer.runs.sweep.spec import load_spec

    path = ROOT / "presets/sweeps/quadruped_push.yaml"
    assert any(str(path.relative_to(ROOT)) in line for _, line in EXAMPLES)
    plan = load_spec(path)
    assert len(plan.cells) == 4 and "shared" not in path.read_text()
    assert all(Path(c.path).resolve().is_relative_to(ROOT) for c in plan.checkpoints)
