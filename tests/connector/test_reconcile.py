from stream_worker.connector.reconcile import Plan, plan


def test_added_changed_removed_and_unchanged_cameras():
    wanted = {"a": 1, "b": 2, "new": 5}
    running = {"a": 1, "b": 3, "gone": 4}
    assert plan(wanted, running) == Plan(start=("new",), restart=("b",), stop=("gone",))


def test_nothing_to_do_is_a_false_plan():
    assert not plan({"a": 1}, {"a": 1})
    assert plan({}, {"a": 1})
