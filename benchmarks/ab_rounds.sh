#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A/B benchmarks on the GPU machine: a baseline tree (before) against this tree
# (after), both built for CPython and PyPy, run_all.py alternating between them.
# Stage the baseline first, here: mkdir -p .device/baseline && git archive REV | tar -x -C .device/baseline
# then, on the GPU machine from the project root: bash benchmarks/ab_rounds.sh ROUNDS ONLY...
# and compare: tar -xf OUT/ab-rounds.tar -C DIR && python3 benchmarks/ab_table.py DIR/*.jsonl
# (every round's results go into that one tar file, rewritten after each run,
# so that a run cut short still returns all finished rounds in one file)
# Needs the staged .device/ of shared/gpu/prepare.sh (wheels, PyPy debs).
# The trees alternate in going first, round by round.
# AB_CPUS (a taskset list, default "2,3") pins every run to the same cores, so
# that the before and after processes do not differ by where they ran; set it
# empty to leave the scheduler free.  AB_SAME_SCRIPTS=1 runs this tree's
# benchmark scripts against both builds (the same measurement code for both).
# AB_NEW_ONLY=1 times this tree alone (no baseline needed): ROUNDS rounds of
# run_all.py, for the min / median / max over rounds that RESULTS.md reports.
# AB_QUICK=1 runs this tree's ab_quick.py (the rows the goals name, a few
# seconds a process) in place of run_all.py, for both builds.
set -u
rounds=${1:-1}; shift
only=(); for o in "$@"; do only+=(--only "$o"); done
O=${OUT:-/tmp/out}; mkdir -p "$O"; root=$(pwd)
export PYTHONUNBUFFERED=1
cpus=${AB_CPUS-2,3}; pin=""; [ -n "$cpus" ] && command -v taskset >/dev/null && pin="taskset -c $cpus"
mkdir -p /tmp/cpsite /tmp/ppsite
for w in .device/cp/*.whl; do python3 -m zipfile -e "$w" /tmp/cpsite; done
for f in .device/debs/*.deb; do dpkg -x "$f" /; done
for w in .device/pp/*.whl; do python3 -m zipfile -e "$w" /tmp/ppsite; done
trees="base new"; [ "${AB_NEW_ONLY:-0}" = 1 ] && trees="new"
rm -rf /tmp/base /tmp/new /tmp/abjson; mkdir -p /tmp/abjson
[ "$trees" = new ] || cp -r .device/baseline /tmp/base
mkdir /tmp/new && tar --exclude=./.device --exclude=./.gl -cf - . | tar -xf - -C /tmp/new
if [ "${AB_SAME_SCRIPTS:-0}" = 1 ] && [ "$trees" != new ]; then rm -rf /tmp/base/benchmarks && cp -r /tmp/new/benchmarks /tmp/base/; fi
for t in $trees; do
  (cd /tmp/$t && export CUDA_CORE_BUILD_BENCH=1 &&
   PYTHONPATH=/tmp/cpsite python3 setup.py -q build_ext --inplace >/tmp/$t-cp-build.log 2>&1 &&
   PYTHONPATH=/tmp/ppsite pypy3 setup.py -q build_ext --inplace >/tmp/$t-pp-build.log 2>&1) || { echo "build $t failed"; tail -20 /tmp/$t-*-build.log; }
done
for r in $(seq 1 "$rounds"); do
  order=$trees  # even rounds run the trees the other way round, so that
  [ $((r % 2)) = 0 ] && [ "$trees" = "base new" ] && order="new base"  # neither always goes first
  for t in $order; do
    echo "=== round $r: $t"; s=$SECONDS
    if [ "${AB_QUICK:-0}" = 1 ]; then
      for i in "python3 /tmp/cpsite" "pypy3 /tmp/ppsite"; do set -- $i
        (cd /tmp/$t && BENCH_JSON="/tmp/abjson/$t-$r.jsonl" PYTHONPATH="/tmp/$t:$2" \
          $pin $1 /tmp/new/benchmarks/ab_quick.py >> /tmp/$t-$r.log 2>&1) || echo "ab_quick $t $1 failed"
      done
    else
    (cd /tmp/$t && $pin python3 benchmarks/run_all.py --interp "CPython=python3:/tmp/$t:/tmp/cpsite" \
      --interp "PyPy=pypy3:/tmp/$t:/tmp/ppsite" "${only[@]}" --out /tmp/$t-$r.md \
      --save-json "/tmp/abjson/$t-$r.jsonl" > /tmp/$t-$r.log 2>&1) || echo "run_all $t failed"
    fi
    tar -cf "$O/ab-rounds.tar" -C /tmp/abjson .
    grep -i "exited\|timed out\|Error" /tmp/$t-$r.log | head -5
    echo "    took $((SECONDS - s)) s"
  done
done
cp /tmp/new-1.md "$O/new-1.md" 2>/dev/null
[ "${AB_QUICK:-0}" = 1 ] && cat /tmp/new-1.log > "$O/new-1.log"
