"""Orbital-mechanics tools with explicit units: the physics the suite's oracle and the +tools arms share.

Constants are stated once here (WGS-84 Earth). Every tool takes JSON arguments, validates them against
its JSON Schema and returns a result dict; bad input comes back as {"error": ...}, never an exception,
and nothing the model writes is ever evaluated as code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MU_EARTH_KM3_S2 = 398600.4418
R_EARTH_KM = 6378.137
RESULT_DECIMALS = 2


def orbital_period_min(altitude_km: float) -> float:
    """Period in minutes of a circular orbit at altitude_km above the equatorial radius (Kepler III)."""
    a = R_EARTH_KM + altitude_km
    return 2.0 * math.pi * math.sqrt(a**3 / MU_EARTH_KM3_S2) / 60.0


def circular_speed_km_s(altitude_km: float) -> float:
    """Speed in km/s of a circular orbit at altitude_km: sqrt(mu / r)."""
    return math.sqrt(MU_EARTH_KM3_S2 / (R_EARTH_KM + altitude_km))


def vis_viva_speed_km_s(radius_km: float, semi_major_axis_km: float) -> float:
    """Speed in km/s at radius_km on an orbit of semi-major axis semi_major_axis_km (vis-viva equation)."""
    return math.sqrt(MU_EARTH_KM3_S2 * (2.0 / radius_km - 1.0 / semi_major_axis_km))


def hohmann_delta_v_km_s(from_altitude_km: float, to_altitude_km: float) -> float:
    """Total delta-v in km/s of a Hohmann transfer between two circular orbits (both burns)."""
    r1, r2 = R_EARTH_KM + from_altitude_km, R_EARTH_KM + to_altitude_km
    a_t = (r1 + r2) / 2.0
    dv1 = abs(vis_viva_speed_km_s(r1, a_t) - math.sqrt(MU_EARTH_KM3_S2 / r1))
    dv2 = abs(math.sqrt(MU_EARTH_KM3_S2 / r2) - vis_viva_speed_km_s(r2, a_t))
    return dv1 + dv2


def miss_distance_km(
    position1_km: list[float],
    velocity1_km_s: list[float],
    position2_km: list[float],
    velocity2_km_s: list[float],
) -> float:
    """Closest-approach distance in km of two objects in straight-line relative motion (t >= 0)."""
    r = [b - a for a, b in zip(position1_km, position2_km, strict=True)]
    v = [b - a for a, b in zip(velocity1_km_s, velocity2_km_s, strict=True)]
    vv = sum(c * c for c in v)
    t = 0.0 if vv == 0.0 else max(0.0, -sum(a * b for a, b in zip(r, v, strict=True)) / vv)
    return math.sqrt(sum((a + b * t) ** 2 for a, b in zip(r, v, strict=True)))


def _num(desc: str, minimum: float | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "number", "description": desc}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


def _vec(desc: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3, "description": desc}


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, what it does, its argument schema, the function and the result key (with unit)."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., float]
    result_key: str


def _object(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec(
            "orbital_period",
            "Period (minutes) of a circular Earth orbit at the given altitude (km).",
            _object({"altitude_km": _num("altitude above Earth's equatorial radius, km", -R_EARTH_KM + 1)}),
            orbital_period_min,
            "period_min",
        ),
        ToolSpec(
            "circular_speed",
            "Speed (km/s) of a circular Earth orbit at the given altitude (km).",
            _object({"altitude_km": _num("altitude above Earth's equatorial radius, km", -R_EARTH_KM + 1)}),
            circular_speed_km_s,
            "speed_km_s",
        ),
        ToolSpec(
            "vis_viva_speed",
            "Orbital speed (km/s) at a radius (km) on an orbit with the given semi-major axis (km).",
            _object(
                {
                    "radius_km": _num("distance from Earth's centre, km", 0),
                    "semi_major_axis_km": _num("semi-major axis of the orbit, km", 0),
                }
            ),
            vis_viva_speed_km_s,
            "speed_km_s",
        ),
        ToolSpec(
            "hohmann_delta_v",
            "Total delta-v (km/s) of a Hohmann transfer between two circular orbits given by altitude (km).",
            _object(
                {
                    "from_altitude_km": _num("altitude of the initial circular orbit, km", -R_EARTH_KM + 1),
                    "to_altitude_km": _num("altitude of the final circular orbit, km", -R_EARTH_KM + 1),
                }
            ),
            hohmann_delta_v_km_s,
            "delta_v_km_s",
        ),
        ToolSpec(
            "miss_distance",
            "Closest-approach distance (km) of two objects from state vectors (km, km/s), straight lines.",
            _object(
                {
                    "position1_km": _vec("position of object 1, km"),
                    "velocity1_km_s": _vec("velocity of object 1, km/s"),
                    "position2_km": _vec("position of object 2, km"),
                    "velocity2_km_s": _vec("velocity of object 2, km/s"),
                }
            ),
            miss_distance_km,
            "miss_km",
        ),
    )
}


def _check_value(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    """Why value does not fit schema (the small subset of JSON Schema the tools use), or None."""
    if schema["type"] == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"argument {name!r} must be a number, got {type(value).__name__}"
        if not math.isfinite(value):
            return f"argument {name!r} must be finite"
        if "minimum" in schema and value < schema["minimum"]:
            return f"argument {name!r} must be >= {schema['minimum']}"
        return None
    if not isinstance(value, list) or len(value) != schema["minItems"]:
        return f"argument {name!r} must be a list of {schema['minItems']} numbers"
    for j, v in enumerate(value):
        err = _check_value(f"{name}[{j}]", v, schema["items"])
        if err:
            return err
    return None


def validate_arguments(name: str, arguments: Any) -> str | None:
    """Why calling tool `name` with `arguments` is invalid (unknown, missing, extra, wrong type), or None."""
    spec = TOOLS.get(name)
    if spec is None:
        return f"unknown tool {name!r}; known tools: {', '.join(sorted(TOOLS))}"
    if not isinstance(arguments, dict):
        return f"arguments of {name!r} must be a JSON object"
    props = spec.parameters["properties"]
    missing = [p for p in spec.parameters["required"] if p not in arguments]
    if missing:
        return f"{name!r} is missing argument(s): {', '.join(missing)}"
    extra = [p for p in arguments if p not in props]
    if extra:
        return f"{name!r} got unknown argument(s): {', '.join(extra)}"
    for p, schema in props.items():
        err = _check_value(p, arguments[p], schema)
        if err:
            return err
    return None


def call_tool(name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool: {result_key: value rounded to RESULT_DECIMALS}, or {"error": why} on bad input."""
    err = validate_arguments(name, arguments)
    if err:
        return {"error": err}
    spec = TOOLS[name]
    try:
        value = spec.fn(**arguments)
    except (ValueError, ZeroDivisionError, OverflowError) as e:
        return {"error": f"{name} could not be computed for these arguments: {e}"}
    if not math.isfinite(value):
        return {"error": f"{name} gave a non-finite result for these arguments"}
    return {spec.result_key: round(value, RESULT_DECIMALS)}
