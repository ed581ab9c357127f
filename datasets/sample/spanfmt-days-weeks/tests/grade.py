"""Grades one verification run as DeepSWE does: reward 1 only when every f2p test passed and
no p2p test failed; a test missing from the JUnit report, skipped or errored counts as failed.

usage: grade.py CONFIG_JSON JUNIT_XML REWARD_JSON    (JUNIT_XML "-": no tests ran, all failed)
Writes {"reward", "f2p_total", "f2p_passed", "p2p_total", "p2p_passed"} to REWARD_JSON. Exit
status 2 when the report cannot be read (the verifier's own failure, not the agent's).
"""

import json
import sys
import xml.etree.ElementTree as ElementTree


def statuses(junit_path):
    if junit_path == "-":
        return {}
    result = {}
    for case in ElementTree.parse(junit_path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test_id = f"{classname}.{name}" if classname else name
        bad = any(case.find(tag) is not None for tag in ("failure", "error", "skipped"))
        # Reported twice (a teardown error after a pass): the worst result holds.
        result[test_id] = result.get(test_id, True) and not bad
    return result


def main(config_path, junit_path, reward_path):
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    try:
        passed = statuses(junit_path)
    except (OSError, ElementTree.ParseError) as exc:
        print(f"grade.py: cannot read {junit_path}: {exc}", file=sys.stderr)
        return 2
    f2p, p2p = config["f2p_node_ids"], config["p2p_node_ids"]
    f2p_passed = sum(passed.get(test_id, False) for test_id in f2p)
    p2p_passed = sum(passed.get(test_id, False) for test_id in p2p)
    reward = 1 if f2p_passed == len(f2p) and p2p_passed == len(p2p) else 0
    document = {"reward": reward, "f2p_total": len(f2p), "f2p_passed": f2p_passed,
                "p2p_total": len(p2p), "p2p_passed": p2p_passed}
    with open(reward_path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
        handle.write("\n")
    print(json.dumps(document))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
