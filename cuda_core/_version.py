# SPDX-License-Identifier: Apache-2.0
"""The package version, defined in this one place."""

__version__ = "0.1.0"

# The version of NVIDIA's cuda.core whose public API this package follows.
UPSTREAM_VERSION = "1.2.2"
