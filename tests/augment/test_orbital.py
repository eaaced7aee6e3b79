"""The orbital tools against hand computations with the stated constants (mu = 398600.4418 km^3/s^2,
R = 6378.137 km).

Expected values are worked out here from the textbook formulas, independently of augment/tools/orbital.py, and
checked against well-known reference figures (a 400 km orbit takes about 92.6 minutes; a geostationary orbit
takes one sidereal day, 1436.07 minutes).
"""

from __future__ import annotations

import math

import pytest

from augment.tools.orbital import (
    MU_EARTH_KM3_S2,
    R_EARTH_KM,
    TOOLS,
    call_tool,
    circular_speed_km_s,
    hohmann_delta_v_km_s,
    miss_distance_km,
    orbital_period_min,
    vis_viva_speed_km_s,
)

MU = 398600.4418
R = 6378.137


def test_constants_are_wgs84() -> None:
    assert MU_EARTH_KM3_S2 == MU
    assert R_EARTH_KM == R


def test_period_of_400_km_orbit() -> None:
    # a = 6778.137 km; T = 2 pi sqrt(a^3 / mu) = 5553.6 s = 92.56 min
    a = R + 400.0
    assert orbital_period_min(400.0) == pytest.approx(2 * math.pi * math.sqrt(a**3 / MU) / 60, rel=1e-12)
    assert orbital_period_min(400.0) == pytest.approx(92.56, abs=0.005)
    assert call_tool("orbital_period", {"altitude_km": 400}) == {"period_min": 92.56}


def test_geostationary_period_is_one_sidereal_day() -> None:
    assert orbital_period_min(35786.0) == pytest.approx(1436.07, abs=0.1)


def test_circular_speed_of_400_km_orbit() -> None:
    # v = sqrt(398600.4418 / 6778.137) = 7.6686 km/s
    assert circular_speed_km_s(400.0) == pytest.approx(7.6686, abs=1e-4)
    assert call_tool("circular_speed", {"altitude_km": 400}) == {"speed_km_s": 7.67}


def test_vis_viva_equals_circular_speed_on_a_circle() -> None:
    r = R + 700.0
    assert vis_viva_speed_km_s(r, r) == pytest.approx(circular_speed_km_s(700.0), rel=1e-12)
    # perigee speed of an ellipse with r = 7000, a = 8000: sqrt(mu (2/7000 - 1/8000)) = 8.0038 km/s
    assert vis_viva_speed_km_s(7000.0, 8000.0) == pytest.approx(
        math.sqrt(MU * (2 / 7000 - 1 / 8000)), rel=1e-12
    )
    assert vis_viva_speed_km_s(7000.0, 8000.0) == pytest.approx(8.0038, abs=1e-4)


def test_hohmann_leo_to_geo() -> None:
    # The classic textbook figure: 400 km LEO to GEO costs about 3.85 km/s in two burns.
    r1, r2 = R + 400.0, R + 35786.0
    at = (r1 + r2) / 2
    dv1 = math.sqrt(MU * (2 / r1 - 1 / at)) - math.sqrt(MU / r1)
    dv2 = math.sqrt(MU / r2) - math.sqrt(MU * (2 / r2 - 1 / at))
    assert hohmann_delta_v_km_s(400.0, 35786.0) == pytest.approx(dv1 + dv2, rel=1e-12)
    assert hohmann_delta_v_km_s(400.0, 35786.0) == pytest.approx(3.85, abs=0.01)


def test_hohmann_is_symmetric_and_zero_for_no_change() -> None:
    assert hohmann_delta_v_km_s(500.0, 900.0) == pytest.approx(hohmann_delta_v_km_s(900.0, 500.0), rel=1e-12)
    assert hohmann_delta_v_km_s(600.0, 600.0) == pytest.approx(0.0, abs=1e-12)


def test_miss_distance_closing_and_receding() -> None:
    # Object 2 starts 10 km along x and moves at (-1, 1, 0) km/s relative: closest at t = 5 s, at (5, 5, 0).
    closing = miss_distance_km([0, 0, 0], [0, 0, 0], [10, 0, 0], [-1, 1, 0])
    assert closing == pytest.approx(math.sqrt(50.0), rel=1e-12)
    # Moving apart: the closest approach is now (t = 0).
    assert miss_distance_km([0, 0, 0], [0, 0, 0], [3, 4, 0], [1, 0, 0]) == pytest.approx(5.0, rel=1e-12)


def test_every_tool_reports_bad_input_as_error() -> None:
    for name in TOOLS:
        assert "error" in call_tool(name, {})
    assert "error" in call_tool("orbital_period", {"altitude_km": "400"})
    assert "error" in call_tool("no_such_tool", {})
