# SPDX-License-Identifier: Apache-2.0
"""Clocks, cooling, temperature and field values of a
:class:`~cuda_core.system.Device`.

:class:`ClockInfo`, :class:`FanInfo` and :class:`Temperature` hold only the
device handle and ask NVML on every call; :class:`CoolerInfo`,
:class:`ClockOffsets`, :class:`ThermalSettings` and :class:`FieldValues` hold
what NVML returned when they were made.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable

from cuda_core._cuda_ffi import ffi, lib
from cuda_core.system._enums import bits_to_members, from_nvml, to_nvml
from cuda_core.system._nvml import (
    READ_FAILED,
    CArrayView,
    check,
    out_result,
    raise_read_failure,
    struct_version,
    uint_result,
)
from cuda_core.system.typing import (
    ClockId,
    ClockType,
    CoolerControl,
    CoolerTarget,
    FanControlPolicy,
    FieldId,
    TemperatureThresholds,
    ThermalController,
    ThermalTarget,
)

__all__ = [
    "ClockInfo",
    "ClockOffsets",
    "CoolerInfo",
    "FanInfo",
    "FieldValue",
    "FieldValues",
    "Temperature",
    "ThermalSensor",
    "ThermalSettings",
]

_MODULE = "cuda_core.system._device"
_ADA = 8  # NVML_DEVICE_ARCH_ADA
_TLIMIT_THRESHOLDS = frozenset(
    (
        TemperatureThresholds.SHUTDOWN,
        TemperatureThresholds.SLOWDOWN,
        TemperatureThresholds.MEM_MAX,
        TemperatureThresholds.GPU_MAX,
    )
)
_CLOCK_OFFSET_VERSION = struct_version("nvmlClockOffset_v1_t", 1)
_FAN_SPEED_VERSION = struct_version("nvmlFanSpeedInfo_v1_t", 1)
_MARGIN_VERSION = struct_version("nvmlMarginTemperature_v1_t", 1)


def _pstate(pstate: object) -> int:
    if isinstance(pstate, bool) or not isinstance(pstate, int) or not 0 <= pstate <= 15:
        raise ValueError(f"pstate must be an int in 0..15 (P0..P15), got {pstate!r}")
    return pstate


class ClockInfo:
    """One clock domain of a device (:meth:`Device.get_clock`)."""

    __slots__ = ("_h", "_type")

    def __init__(self, handle: Any, clock_type: ClockType | str) -> None:
        self._h = handle
        self._type = to_nvml(ClockType, clock_type)

    def get_current_mhz(self, clock_id: ClockId | str = ClockId.CURRENT) -> int:
        """Return the clock in MHz: the current one or the customer boost maximum."""
        cid = to_nvml(ClockId, clock_id)
        return uint_result(lib.nvmlDeviceGetClock, self._h, self._type, cid)

    def get_max_mhz(self) -> int:
        """Return the highest clock the device allows, in MHz."""
        return uint_result(lib.nvmlDeviceGetMaxClockInfo, self._h, self._type)

    def get_max_customer_boost_mhz(self) -> int:
        """Return the customer-defined boost maximum, in MHz."""
        value: int = out_result(
            "unsigned int", lib.nvmlDeviceGetMaxCustomerBoostClock, self._h, self._type
        )
        return value

    def get_min_max_clock_of_pstate_mhz(self, pstate: int) -> tuple[int, int]:
        """Return ``(min, max)`` MHz of this clock in performance state ``pstate`` (0..15)."""
        lo, hi = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMinMaxClockOfPState(self._h, self._type, _pstate(pstate), lo, hi))
        return (lo[0], hi[0])

    def get_offsets(self, pstate: int) -> ClockOffsets:
        """Return the clock offsets of performance state ``pstate`` (0..15)."""
        info = ffi.new("nvmlClockOffset_t *")
        info.version = _CLOCK_OFFSET_VERSION
        info.type = self._type
        info.pstate = _pstate(pstate)
        check(lib.nvmlDeviceGetClockOffsets(self._h, info))
        return ClockOffsets(info)


class ClockOffsets:
    """A clock's offset and its allowed range, in MHz (signed)."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    @property
    def clock_offset_mhz(self) -> int:
        """int: The current offset."""
        value: int = self._s.clockOffsetMHz
        return value

    @property
    def max_offset_mhz(self) -> int:
        """int: The largest allowed offset."""
        value: int = self._s.maxClockOffsetMHz
        return value

    @property
    def min_offset_mhz(self) -> int:
        """int: The smallest allowed offset."""
        value: int = self._s.minClockOffsetMHz
        return value


class CoolerInfo:
    """Cooler 0 of a device: how it is driven and what it cools."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    @property
    def signal_type(self) -> CoolerControl | None:
        """CoolerControl or None: How the cooler is driven (None: not controlled)."""
        control: CoolerControl | None = from_nvml(CoolerControl, self._s.signalType, None)
        return control

    @property
    def target(self) -> list[CoolerTarget]:
        """list[CoolerTarget]: What the cooler cools."""
        return bits_to_members(CoolerTarget, self._s.target)


class FanInfo:
    """One fan of a device (:meth:`Device.get_fan`)."""

    __slots__ = ("_h", "_fan")

    def __init__(self, handle: Any, fan: int) -> None:
        self._h = handle
        self._fan = fan

    @property
    def speed(self) -> int:
        """int: The fan speed in percent of its maximum.  Settable (needs privileges)."""
        return uint_result(lib.nvmlDeviceGetFanSpeed_v2, self._h, self._fan)

    @speed.setter
    def speed(self, percent: int) -> None:
        check(lib.nvmlDeviceSetFanSpeed_v2(self._h, self._fan, percent))

    @property
    def speed_rpm(self) -> int:
        """int: The fan speed in revolutions per minute."""
        info = ffi.new("nvmlFanSpeedInfo_t *")
        info.version = _FAN_SPEED_VERSION
        info.fan = self._fan
        check(lib.nvmlDeviceGetFanSpeedRPM(self._h, info))
        value: int = info.speed
        return value

    @property
    def target_speed(self) -> int:
        """int: The speed the fan is driven towards, in percent."""
        return uint_result(lib.nvmlDeviceGetTargetFanSpeed, self._h, self._fan)

    @property
    def min_max_speed(self) -> tuple[int, int]:
        """tuple[int, int]: The lowest and highest settable speed, in percent."""
        lo, hi = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMinMaxFanSpeed(self._h, lo, hi))
        return (lo[0], hi[0])

    @property
    def control_policy(self) -> FanControlPolicy:
        """FanControlPolicy: Whether the driver or the user sets the speed."""
        value = out_result(
            "nvmlFanControlPolicy_t", lib.nvmlDeviceGetFanControlPolicy_v2, self._h, self._fan
        )
        policy: FanControlPolicy = from_nvml(FanControlPolicy, value)
        return policy

    def set_default_speed(self) -> None:
        """Give the fan back to the driver's automatic control (needs privileges)."""
        check(lib.nvmlDeviceSetDefaultFanSpeed_v2(self._h, self._fan))


class Temperature:
    """A device's temperatures (asked on every call)."""

    __slots__ = ("_h",)

    def __init__(self, handle: Any) -> None:
        self._h = handle

    def get_sensor(self) -> int:  # type: ignore[return]  # raise_read_failure raises
        """Return the GPU core temperature, in °C."""
        # nvmlDeviceGetTemperatureV for NVML_TEMPERATURE_GPU, struct and all in C
        value: int = lib.cc_nvml_gpu_temperature(self._h)
        if value > READ_FAILED:
            return value
        raise_read_failure(value)

    def get_threshold(self, threshold_type: TemperatureThresholds | str) -> int:
        """Return the temperature threshold ``threshold_type``, in °C.

        On Ada and newer GPUs the SHUTDOWN, SLOWDOWN, MEM_MAX and GPU_MAX
        thresholds are deprecated (a :class:`DeprecationWarning`); read the
        ``DEV_TEMPERATURE_*_TLIMIT`` field values instead.
        """
        value = to_nvml(TemperatureThresholds, threshold_type)
        if TemperatureThresholds(threshold_type) in _TLIMIT_THRESHOLDS:
            arch = out_result("nvmlDeviceArchitecture_t", lib.nvmlDeviceGetArchitecture, self._h)
            if _ADA <= arch != 0xFFFFFFFF:
                warnings.warn(
                    f"the {TemperatureThresholds(threshold_type).name} threshold is "
                    "deprecated on this architecture; use Device.get_field_values with "
                    "FieldId.DEV_TEMPERATURE_*_TLIMIT instead",
                    DeprecationWarning,
                    stacklevel=2,
                )
        threshold: int = out_result(
            "unsigned int", lib.nvmlDeviceGetTemperatureThreshold, self._h, value
        )
        return threshold

    @property
    def margin(self) -> int:
        """int: Degrees below the slowdown threshold (negative: above it)."""
        info = ffi.new("nvmlMarginTemperature_t *")
        info.version = _MARGIN_VERSION
        check(lib.nvmlDeviceGetMarginTemperature(self._h, info))
        value: int = info.marginTemperature
        return value

    def get_thermal_settings(self, sensor_index: ThermalTarget | str) -> ThermalSettings:
        """Return the thermal sensors for target ``sensor_index`` (a :class:`ThermalTarget`)."""
        target = to_nvml(ThermalTarget, sensor_index)
        settings = ffi.new("nvmlGpuThermalSettings_t *")
        check(lib.nvmlDeviceGetThermalSettings(self._h, target, settings))
        return ThermalSettings(settings)


class ThermalSettings:
    """The thermal sensors NVML reported (at most three)."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    def __len__(self) -> int:
        count: int = min(self._s.count, 3)
        return count

    def __getitem__(self, index: int) -> ThermalSensor:
        if not isinstance(index, int) or not 0 <= index < len(self):
            raise IndexError(f"sensor index {index!r} out of range 0..{len(self) - 1}")
        return ThermalSensor(self._s, self._s.sensor[index])


class ThermalSensor:
    """One thermal sensor: its controller, target and temperatures (°C)."""

    __slots__ = ("_owner", "_t")

    def __init__(self, owner: Any, item: Any) -> None:
        self._owner = owner  # keeps the struct holding ``item`` alive
        self._t = item

    @property
    def controller(self) -> ThermalController:
        """ThermalController: The sensor's chip (UNKNOWN when unmapped)."""
        controller: ThermalController = from_nvml(
            ThermalController, self._t.controller, ThermalController.UNKNOWN
        )
        return controller

    @property
    def default_min_temp(self) -> int:
        """int: The default minimum temperature."""
        value: int = self._t.defaultMinTemp
        return value

    @property
    def default_max_temp(self) -> int:
        """int: The default maximum temperature."""
        value: int = self._t.defaultMaxTemp
        return value

    @property
    def current_temp(self) -> int:
        """int: The current temperature."""
        value: int = self._t.currentTemp
        return value

    @property
    def target(self) -> ThermalTarget:
        """ThermalTarget: What the sensor measures (NONE when unmapped)."""
        target: ThermalTarget = from_nvml(ThermalTarget, self._t.target, ThermalTarget.NONE)
        return target


_VALUE_READERS: dict[int, Callable[[Any], int | float]] = {
    0: lambda v: v.dVal,
    1: lambda v: v.uiVal,
    2: lambda v: v.ulVal,
    3: lambda v: v.ullVal,
    4: lambda v: v.sllVal,
    5: lambda v: v.siVal,
    6: lambda v: v.usVal,
}


class FieldValue:
    """One entry of :class:`FieldValues`."""

    __slots__ = ("_owner", "_f")

    def __init__(self, owner: Any, item: Any) -> None:
        self._owner = owner  # keeps the array holding ``item`` alive
        self._f = item

    def __repr__(self) -> str:
        return f"<FieldValue field_id={self._f.fieldId} scope_id={self._f.scopeId}>"

    @property
    def field_id(self) -> FieldId:
        """FieldId: The field (ValueError for an id this version does not know)."""
        return FieldId(self._f.fieldId)

    @property
    def scope_id(self) -> int:
        """int: The scope (e.g. the NVLink link) the value belongs to."""
        value: int = self._f.scopeId
        return value

    @property
    def timestamp(self) -> int:
        """int: When the value was taken, in µs since the epoch."""
        value: int = self._f.timestamp
        return value

    @property
    def latency_usec(self) -> int:
        """int: How long the value took to fetch, in µs."""
        value: int = self._f.latencyUsec
        return value

    @property
    def value(self) -> int | float:
        """int or float: The value; raises the entry's NVML error if it has one."""
        check(self._f.nvmlReturn)
        reader = _VALUE_READERS.get(self._f.valueType)
        if reader is None:
            raise AssertionError(f"unknown NVML value type {self._f.valueType}")
        return reader(self._f.value)


class FieldValues(CArrayView):
    """The answer of :meth:`Device.get_field_values`: a sequence of :class:`FieldValue`."""

    __slots__ = ()
    _item_name = "field value"
    _item_type = FieldValue

    def validate(self) -> None:
        """Raise the NVML error of the first entry that has one."""
        for i in range(self._n):
            check(self._a[i].nvmlReturn)

    def get_all_values(self) -> list[int | float]:
        """Return every entry's value (raising the first entry error met)."""
        return [self[i].value for i in range(self._n)]


def field_value_array(field_ids: Iterable[int | tuple[int, int]]) -> tuple[Any, int]:
    """Return ``(array, count)`` of ``nvmlFieldValue_t`` for ``field_ids``.

    Each item is a field id (a :class:`FieldId` or int) or ``(field_id,
    scope_id)``; anything else raises ValueError.
    """
    pairs: list[tuple[int, int]] = []
    for item in field_ids:
        if isinstance(item, tuple):
            if len(item) != 2 or not all(_is_int(x) for x in item):
                raise ValueError(
                    f"a field value request tuple must be (field_id, scope_id) ints, got {item!r}"
                )
            pairs.append((int(item[0]), int(item[1])))
        elif _is_int(item):
            pairs.append((int(item), 0))
        else:
            raise ValueError(
                "field_ids items must be a FieldId, an int or a (field_id, scope_id) "
                f"tuple, got {item!r}"
            )
    array = ffi.new("nvmlFieldValue_t[]", max(len(pairs), 1))
    for i, (fid, scope) in enumerate(pairs):
        array[i].fieldId = fid
        array[i].scopeId = scope
    return array, len(pairs)


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


for _cls in (
    ClockInfo,
    ClockOffsets,
    CoolerInfo,
    FanInfo,
    FieldValue,
    FieldValues,
    Temperature,
    ThermalSensor,
    ThermalSettings,
):
    _cls.__module__ = _MODULE
