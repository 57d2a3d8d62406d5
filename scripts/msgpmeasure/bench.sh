#!/usr/bin/env bash
# The per-record CPU of the hand-written codecs (the product's own
# benchmarks) against msgp's generated code, in one run: the test binaries
# are built once, then run in turn ROUNDS times (default 3), so that both
# see the same load. Prints one line a benchmark and round.
#
#   scripts/msgpmeasure/bench.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
out=$(mktemp -d)
go test -c -o "$out/eventlog.test" ./eventlog
go test -c -o "$out/state.test" ./state
go test -c -o "$out/wire.test" ./wire
(cd scripts/msgpmeasure && go generate && go test -c -o "$out/msgp.test" .)
run() { "$out/$1.test" -test.run '^$' -test.bench "$2" -test.benchtime 200000x -test.benchmem | grep '^Benchmark'; }
for r in $(seq "$rounds"); do
  echo "# round $r"
  run eventlog 'EncodeEvent$|DecodeEnvelope$'
  run state 'RecordByHand$'
  run wire 'DecodeIntentByHand$|EncodeResultByHand$'
  run msgp 'Msgp'
done
rm -rf "$out"
