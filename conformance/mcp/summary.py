"""Print what each conformance run passed, and check that every baseline entry was run.

Usage: ``summary.py <results-dir> <expected-failures.yml> <requirements-dir>`` (run.sh calls it). Exits 1 when an
entry of the baseline names a scenario no run ran (an entry that can never go stale is no entry).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def _baseline(path: Path) -> list[str]:
    entries = []
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*-\s*([^#\s]+)", line)
        if match:
            entries.append(match.group(1))
    return entries


def _not_scored(requirements: Path) -> set[str]:
    """Scenarios a requirement set runs but never scores (extensions, added after release)."""
    names = set()
    for path in requirements.glob("*.yaml"):
        names.update(re.findall(r"^\s*-\s*scenario:\s*(\S+)", path.read_text(), re.M))
    return names


def _results(run: Path) -> dict[str, list[dict[str, object]]]:
    results = {}
    for checks in sorted(run.glob("**/checks.json")):
        scenario = _STAMP.sub("", checks.parent.relative_to(run).as_posix())
        results[scenario] = json.loads(checks.read_text())
    return results


def main(out: Path, baseline_path: Path, requirements: Path) -> int:
    baseline = _baseline(baseline_path)
    whole = {entry for entry in baseline if ":" not in entry}
    per_check = {entry for entry in baseline if ":" in entry}
    not_scored = _not_scored(requirements)
    ran: set[str] = set()
    print(
        "\n=== MCP conformance summary (client scenarios: our at.mcp.http; "
        "server-*: our MCP front) ==="
    )
    for run in sorted(p for p in out.iterdir() if p.is_dir()):
        print(f"\n{run.name}:")
        for scenario, checks in _results(run).items():
            ran.add(scenario)
            failed = [c["id"] for c in checks if c.get("status") in ("FAILURE", "WARNING")]
            passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
            unexpected = [c for c in failed if f"{scenario}:{c}" not in per_check]
            if not failed:
                verdict = "PASS"
            elif scenario in whole:
                verdict = "expected failure (baseline)"
            elif not unexpected:
                verdict = f"PASS but {len(failed)} check(s) in the baseline"
            else:
                verdict = "FAIL " + ", ".join(map(str, unexpected))
            if failed and scenario in not_scored and run.name != "2026-07-28-preservation":
                verdict += " (not scored)"
            print(f"  {scenario:45} {passed:3} checks passed  {verdict}")
    codes = out / "exit-codes"
    if codes.exists():
        print("\nsuite verdicts (baseline applied by the suite):")
        print("".join(f"  {line}\n" for line in codes.read_text().splitlines()), end="")
    never = [entry for entry in baseline if entry.split(":")[0] not in ran]
    if never:
        print(f"\nbaseline entries no run ran (remove them): {', '.join(never)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
