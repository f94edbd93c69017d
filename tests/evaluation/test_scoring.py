"""Scoring is pure: every rule of matching and counting, on hand-made predictions."""

from __future__ import annotations

import pytest

from stream_worker.evaluation.labels import ImageLabel
from stream_worker.evaluation.scoring import (
    ImageScore,
    Prediction,
    iou,
    match_boxes,
    match_texts,
    score_crop,
    score_image,
    totals,
    totals_by_country,
    unmet_thresholds,
)

PLATE = (100.0, 100.0, 200.0, 140.0)
OTHER_PLATE = (300.0, 100.0, 400.0, 140.0)
FAR_AWAY = (600.0, 600.0, 700.0, 640.0)


def label(
    plates: list[str | None] | None, boxes: list[tuple[float, float, float, float]] | None
) -> ImageLabel:
    return ImageLabel(plates=plates, boxes=boxes)


def read(text: str, box: tuple[float, float, float, float] = PLATE) -> Prediction:
    return Prediction(text=text, box=box)


# --- IoU ---------------------------------------------------------------------


def test_iou_of_identical_disjoint_and_half_boxes() -> None:
    assert iou(PLATE, PLATE) == 1.0
    assert iou(PLATE, FAR_AWAY) == 0.0
    assert iou((0, 0, 10, 10), (0, 0, 10, 5)) == 0.5
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)


def test_iou_of_touching_and_empty_boxes_is_zero() -> None:
    assert iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    assert iou((0, 0, 0, 0), (0, 0, 0, 0)) == 0.0


# --- matching ----------------------------------------------------------------------------------


def test_iou_exactly_at_the_threshold_matches_just_below_does_not() -> None:
    labelled = [(0.0, 0.0, 10.0, 10.0)]
    assert match_boxes(labelled, [(0.0, 0.0, 10.0, 5.0)]) == {0: (0, 0.5)}
    assert match_boxes(labelled, [(0.0, 0.0, 10.0, 4.9)]) == {}


def test_one_prediction_finds_one_plate_only_the_better_overlap() -> None:
    labelled = [(0.0, 0.0, 10.0, 10.0), (0.0, 0.0, 10.0, 6.0)]
    pairs = match_boxes(labelled, [(0.0, 0.0, 10.0, 7.0)])  # IoU 0.7 with label 0, 6/7 with label 1
    assert pairs == {1: (0, pytest.approx(6 / 7))}


def test_best_iou_first_not_label_order() -> None:
    labelled = [(0.0, 0.0, 10.0, 10.0), (0.0, 0.0, 10.0, 8.0)]
    predicted = [(0.0, 0.0, 10.0, 8.5), (0.0, 0.0, 10.0, 7.0)]
    # IoUs: label 0 / prediction 0 0.85, label 0 / 1 0.7, label 1 / 0 0.94, label 1 / 1 0.875.
    # Label order would give label 0 prediction 0; the best pair (label 1, prediction 0) goes first.
    assert match_boxes(labelled, predicted) == {
        1: (0, pytest.approx(8 / 8.5)),
        0: (1, pytest.approx(0.7)),
    }


def test_each_prediction_used_once_even_when_two_labels_prefer_it() -> None:
    labelled = [(0.0, 0.0, 10.0, 10.0), (0.0, 0.0, 10.0, 10.0)]  # a duplicated label
    assert match_boxes(labelled, [(0.0, 0.0, 10.0, 10.0)]) == {0: (0, 1.0)}


def test_no_predictions_no_labels() -> None:
    assert match_boxes([PLATE], []) == {}
    assert match_boxes([], [PLATE]) == {}


def test_texts_pair_closest_first() -> None:
    assert match_texts(["H126EK178", "K327HI78"], ["K327H178", "H126EK178", "X"]) == {0: 1, 1: 0}
    assert match_texts(["A"], []) == {}


# --- one image ---------------------------------------------------------------------------------


def test_found_and_read_exactly() -> None:
    score = score_image("a.jpg", label(["A123BC77"], [PLATE]), "ok", [read("A123BC77")])
    assert (score.labelled, score.found, score.other_boxes) == (1, 1, 0)
    assert (score.texts_labelled, score.texts_exact, score.texts_within_one) == (1, 1, 1)
    assert (score.char_errors, score.char_total) == (0, 8)
    assert score.plates[0].iou == 1.0
    assert score.matched_by == "box"


def test_one_character_off_is_within_one_not_exact() -> None:
    score = score_image("a.jpg", label(["B840CK197"], [PLATE]), "ok", [read("B840OK197")])
    assert (score.texts_exact, score.texts_within_one, score.char_errors) == (0, 1, 1)


def test_box_missed_counts_as_wrong_text_with_every_character_an_error() -> None:
    score = score_image("a.jpg", label(["A123BC77"], [PLATE]), "ok", [read("A123BC77", FAR_AWAY)])
    assert (score.found, score.other_boxes) == (0, 1)
    assert (score.texts_exact, score.texts_within_one, score.char_errors, score.char_total) == (0, 0, 8, 8)
    assert score.plates[0].read is None
    assert score.other_texts == ["A123BC77"]  # the right text in the wrong place earns nothing


def test_empty_predictions() -> None:
    score = score_image("a.jpg", label(["A123BC77", None], [PLATE, OTHER_PLATE]), "ok", [])
    assert (score.labelled, score.found, score.other_boxes) == (2, 0, 0)
    assert (score.texts_labelled, score.texts_exact, score.char_errors) == (1, 0, 8)


def test_null_text_counts_for_boxes_not_texts() -> None:
    score = score_image(
        "a.jpg",
        label(["A123BC77", None], [PLATE, OTHER_PLATE]),
        "ok",
        [read("A123BC77"), read("X999XX99", OTHER_PLATE)],
    )
    assert (score.labelled, score.found) == (2, 2)
    assert (score.texts_labelled, score.texts_exact, score.char_total) == (1, 1, 8)


def test_boxes_without_plates_are_all_unknown_texts() -> None:
    score = score_image("a.jpg", ImageLabel(boxes=[PLATE]), "ok", [read("A123BC77")])
    assert (score.labelled, score.found, score.texts_labelled, score.char_total) == (1, 1, 0, 0)


def test_extra_boxes_are_other_boxes() -> None:
    score = score_image(
        "a.jpg", label(["A123BC77"], [PLATE]), "ok", [read("A123BC77"), read("", FAR_AWAY), read("7", PLATE)]
    )
    assert (score.found, score.other_boxes) == (1, 2)
    assert sorted(score.other_texts) == ["", "7"]


def test_no_plates_labelled_every_prediction_is_other() -> None:
    score = score_image("cat.jpg", label([], []), "ok", [read("A1"), read("B2", FAR_AWAY)])
    assert (score.labelled, score.found, score.texts_labelled, score.other_boxes) == (0, 0, 0, 2)


def test_rejected_frame_finds_nothing() -> None:
    score = score_image("bad.jpg", label(["A123BC77"], [PLATE]), "invalid_image: cannot decode", [])
    assert score.status == "invalid_image: cannot decode"
    assert (score.found, score.texts_exact, score.char_errors, score.other_boxes) == (0, 0, 8, 0)


def test_labelled_without_boxes_pairs_by_text() -> None:
    score = score_image(
        "far.jpg",
        label(["H126EK178", "K327HI78"], None),
        "ok",
        [read("K327H178", OTHER_PLATE), read("H126EK178"), read("X", FAR_AWAY)],
    )
    assert score.matched_by == "text"
    assert (score.labelled, score.found, score.other_boxes) == (0, 0, 1)
    assert [plate.read for plate in score.plates] == ["H126EK178", "K327H178"]
    assert all(plate.iou is None for plate in score.plates)
    assert (score.texts_exact, score.texts_within_one, score.char_errors, score.char_total) == (1, 2, 1, 17)


# --- totals ------------------------------------------------------------------------------------


def _folder() -> list[ImageScore]:
    return [
        score_image("a.jpg", label(["A123BC77"], [PLATE]), "ok", [read("A123BC77")]),
        score_image("b.jpg", label(["B840CK197"], [PLATE]), "ok", [read("B840OK197", (100, 100, 200, 130))]),
        score_image("c.jpg", label(["C000CC00", None], [PLATE, OTHER_PLATE]), "ok", [read("Q", FAR_AWAY)]),
        score_image("d.jpg", label([], []), "invalid_image: cannot decode", []),
    ]


def test_totals_over_a_folder() -> None:
    result = totals(_folder())
    assert (result.images, result.rejected) == (4, 1)
    assert (result.plates_labelled, result.plates_found, result.found_rate) == (4, 2, 0.5)
    assert result.mean_iou == pytest.approx((1.0 + 0.75) / 2)
    assert (result.texts_labelled, result.texts_exact, result.texts_within_one) == (3, 1, 2)
    assert result.exact_rate == pytest.approx(1 / 3)
    assert result.within_one_rate == pytest.approx(2 / 3)
    assert (result.char_errors, result.char_total) == (0 + 1 + 8, 8 + 9 + 8)
    assert result.char_error_rate == pytest.approx(9 / 25)
    assert result.other_boxes == 1
    assert result.images_matched_by_text == 0


def test_totals_with_nothing_to_divide_by_have_no_rates() -> None:
    result = totals([score_image("cat.jpg", label([], []), "ok", [])])
    assert (result.found_rate, result.mean_iou, result.exact_rate, result.char_error_rate) == (None,) * 4


# --- thresholds --------------------------------------------------------------------------------


def test_thresholds_met_or_not_asked() -> None:
    result = totals(_folder())
    assert unmet_thresholds(result, None, None) == []
    assert unmet_thresholds(result, 0.5, 1 / 3) == []


def test_thresholds_not_met_say_which() -> None:
    unmet = unmet_thresholds(totals(_folder()), 0.51, 0.9)
    assert unmet == ["plates found: 50.0% < 51.0%", "exact texts: 33.3% < 90.0%"]


def test_threshold_with_nothing_to_measure_is_not_met() -> None:
    result = totals([score_image("cat.jpg", label([], []), "ok", [])])
    assert unmet_thresholds(result, None, 0.5) == ["exact texts: nothing labelled to measure < 50.0%"]


# --- loose boxes, crops, countries ---------------------------------------------


def test_a_loose_box_is_found_at_iou_03_only() -> None:
    loose_box = (100.0, 100.0, 200.0, 190.0)  # IoU 40/90 = 0.44 with PLATE
    score = score_image("a.jpg", label(None, [PLATE, OTHER_PLATE]), "ok", [read("X", loose_box)], "ro")
    assert (score.found, score.found_loose, score.country) == (0, 1, "ro")
    summed = totals([score])
    assert (summed.plates_found_loose, summed.found_loose_rate, summed.found_rate) == (1, 0.5, 0.0)


def test_a_crop_is_scored_on_its_first_read_without_boxes() -> None:
    exact = score_crop("a.png", "FUW999", "us", "ok", [read("FUW999"), read("OTHER")])
    assert (exact.matched_by, exact.labelled, exact.texts_exact, exact.other_boxes) == ("crop", 0, 1, 0)
    wrong = score_crop("b.png", "AB123CD", "ar", "ok", [read("AB123C0")])
    assert (wrong.texts_exact, wrong.char_errors, wrong.char_total) == (0, 1, 7)
    unread = score_crop("c.png", "ABC123", "ar", "invalid_image: not a JPEG", [read("ABC123")])
    assert (unread.texts_exact, unread.char_errors) == (0, 6)
    summed = totals([exact, wrong, unread])
    assert summed.images_matched_by_text == 0
    assert summed.char_accuracy == pytest.approx(1 - 7 / 19)


def test_totals_by_country_group_the_rows_the_labels_name() -> None:
    rows = [
        score_crop("a.png", "FUW999", "us", "ok", [read("FUW999")]),
        score_crop("b.png", "AB123CD", "ar", "ok", [read("AB123C0")]),
        score_crop("c.png", "XYZ999", "us", "ok", [read("XYZ990")]),
        score_image("d.jpg", label(["A123BC77"], [PLATE]), "ok", []),  # no country: in no group
    ]
    by_country = totals_by_country(rows)
    assert list(by_country) == ["ar", "us"]
    assert (by_country["us"].texts_labelled, by_country["us"].exact_rate) == (2, 0.5)
    assert by_country["ar"].char_accuracy == pytest.approx(6 / 7)
    assert totals_by_country(rows[3:]) == {}
