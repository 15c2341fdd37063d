"""Every method of the API, registered in ``TABLE`` by importing the modules that define them."""

from anyy.gateway import (
    methods_backup,
    methods_channels,
    methods_delegation,
    methods_devices,
    methods_misc,
    methods_queue,
    methods_render,
    methods_residents,
    methods_schedules,
    methods_sessions,
    methods_usage,
)
from anyy.gateway.table import TABLE

__all__ = [
    "TABLE",
    "methods_backup",
    "methods_channels",
    "methods_delegation",
    "methods_devices",
    "methods_misc",
    "methods_queue",
    "methods_render",
    "methods_residents",
    "methods_schedules",
    "methods_sessions",
    "methods_usage",
]
