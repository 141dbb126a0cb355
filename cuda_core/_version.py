# SPDX-License-Identifier: Apache-2.0
"""The package version, defined in this one place."""

__version__ = "0.1.0"
