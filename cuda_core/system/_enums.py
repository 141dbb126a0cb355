# SPDX-License-Identifier: Apache-2.0
"""NVML's integer for each :mod:`cuda_core.system.typing` member, and back.

:func:`to_nvml` accepts a member or its string value (the API's arguments);
the ``*_FROM_NVML`` tables decode what NVML returns.  Bit-flag enumerations
decode through :func:`bits_to_members`.
"""

from __future__ import annotations

import enum
from typing import Any, TypeVar

from cuda_core.system.typing import (
    AddressingMode,
    AffinityScope,
    ClockId,
    ClocksEventReasons,
    ClockType,
    CoolerControl,
    CoolerTarget,
    EventType,
    FanControlPolicy,
    GpuP2PCapsIndex,
    GpuP2PStatus,
    GpuTopologyLevel,
    InforomObject,
    SystemEventType,
    TemperatureThresholds,
    ThermalController,
    ThermalTarget,
)

__all__ = ["NVML_VALUES", "bits_to_members", "from_nvml", "to_nvml"]

_E = TypeVar("_E", bound=enum.Enum)

_A, _S = AffinityScope, ClockId
NVML_VALUES: dict[type[enum.Enum], dict[Any, int]] = {
    AddressingMode: {AddressingMode.HMM: 1, AddressingMode.ATS: 2},
    AffinityScope: {_A.NODE: 0, _A.SOCKET: 1},
    ClockId: {_S.CURRENT: 0, _S.CUSTOMER_BOOST_MAX: 3},
    ClocksEventReasons: {
        member: (0 if i == 0 else 1 << (i - 1)) for i, member in enumerate(ClocksEventReasons)
    },
    ClockType: {ClockType.GRAPHICS: 0, ClockType.SM: 1, ClockType.MEMORY: 2, ClockType.VIDEO: 3},
    CoolerControl: {CoolerControl.TOGGLE: 1, CoolerControl.VARIABLE: 2},
    CoolerTarget: {member: 1 << i for i, member in enumerate(CoolerTarget)},
    EventType: dict(
        zip(
            EventType,
            (0, 0x1, 0x2, 0x4, 0x8, 0x10, 0x80, 0x100, 0x200, 0x400, 0x800)
            + (0x1000, 0x2000, 0x4000, 0x8000),
        )
    ),
    FanControlPolicy: {FanControlPolicy.TEMPERATURE_CONTROLLED: 0, FanControlPolicy.MANUAL: 1},
    GpuP2PCapsIndex: dict(zip(GpuP2PCapsIndex, (0, 1, 2, 3, 4, 4, 5))),
    GpuP2PStatus: {member: i for i, member in enumerate(GpuP2PStatus)},
    GpuTopologyLevel: {member: 10 * i for i, member in enumerate(GpuTopologyLevel)},
    InforomObject: {member: i for i, member in enumerate(InforomObject)},
    SystemEventType: {SystemEventType.UNBIND: 0x1, SystemEventType.BIND: 0x2},
    TemperatureThresholds: {member: i for i, member in enumerate(TemperatureThresholds)},
    ThermalController: {
        **{member: i for i, member in enumerate(list(ThermalController)[:-1], 1)},
        ThermalController.UNKNOWN: -1,
    },
    ThermalTarget: dict(zip(ThermalTarget, (0, 1, 2, 4, 8, 9, 10, 11, 15))),
}

# NVML value -> member; where two members share a value (PCI/PROP) the first wins.
_FROM_NVML: dict[type[enum.Enum], dict[int, Any]] = {}
for _cls, _table in NVML_VALUES.items():
    _back: dict[int, Any] = {}
    for _member, _value in _table.items():
        _back.setdefault(_value, _member)
    _FROM_NVML[_cls] = _back


def to_nvml(cls: type[enum.Enum], value: enum.Enum | str) -> int:
    """Return NVML's integer for ``value``, a member of ``cls`` or its string.

    Raises
    ------
    ValueError
        If ``value`` is neither, naming the valid values.
    """
    try:
        member = cls(value)
    except ValueError:
        valid = ", ".join(repr(m.value) for m in cls)
        raise ValueError(
            f"{value!r} is not a valid {cls.__name__}; expected one of: {valid}"
        ) from None
    return NVML_VALUES[cls][member]


def from_nvml(cls: type[enum.Enum], value: int, default: Any = KeyError) -> Any:
    """Return the member of ``cls`` for NVML's ``value``.

    ``default`` is returned for an unmapped value; without it, KeyError.
    """
    member = _FROM_NVML[cls].get(value)
    if member is None:
        if default is KeyError:
            raise KeyError(value)
        return default
    return member


def bits_to_members(cls: type[_E], mask: int) -> list[_E]:
    """Decode a bit mask into members of ``cls``, lowest bit first.

    Raises
    ------
    ValueError
        If a set bit has no member.
    """
    out: list[_E] = []
    bit = 1
    back = _FROM_NVML[cls]
    while mask:
        if mask & 1:
            member = back.get(bit)
            if member is None:
                raise ValueError(f"{bit:#x} is not a valid {cls.__name__} bit")
            out.append(member)
        mask >>= 1
        bit <<= 1
    return out
