#!/usr/bin/env bash
# The house-style figures, measured on the working tree: run it before and
# after a change and compare. Every figure is a command anyone can rerun;
# each is printed before its output.
#
#   scripts/stylefigures/figures.sh
set -uo pipefail
cd "$(dirname "$0")/../.."

run() { printf '\n$ %s\n' "$*"; bash -c "$*"; }

# The wire contract's package: topics before the rename, wire after it.
WIRE=topics; [[ -d wire ]] && WIRE=wire
# The fold-through layer's package: view before the rename, overlay after.
OVL=view; [[ -d overlay ]] && OVL=overlay
# The msgpack plumbing: internal/ before the grouping, internal/msgpack after.
MP=internal; [[ -d internal/msgpack ]] && MP=internal/msgpack

echo "## Executor and executor/'s file graph"
run "go run ./scripts/stylefigures -dir executor -type Executor"
run "go run ./scripts/stylefigures -dir executor -type Executor -types | sed -n '/file graph/,\$p'"

echo; echo "## Hand-written msgpack codecs: lines"
run "wc -l eventlog/{codec,decoder,encoder}.go $WIRE/{codec,decoder,encoder}.go state/{codec,decoder,encoder}.go $MP/mpread/{any,reader,saga}.go $MP/mpwrite/{canonical,saga,writer}.go $MP/mpstruct/{plan,read,write}.go 2>/dev/null | tail -n1"
echo; echo "## Codec idioms (one line per idiom found)"
run "grep -cE 'Fields\\[string\\(name\\)\\]' eventlog/decoder.go"   # a map of closures
run "grep -cE '1 << iota' $WIRE/decoder.go"                     # iota bits and two switches
run "grep -cE '1 ?<< ?[0-9]+' state/decoder.go"                 # literal shifts
run "grep -c 'case \"' $MP/mpread/saga.go"                  # an inline switch
run "grep -c '^func (p \*plan) read(' $MP/mpstruct/read.go"  # the planned codecs' one loop
echo; echo "## Generic readers/writers that import the domain"
run "go list -f '{{.ImportPath}}: {{join .Imports \" \"}}' ./$MP/mpread ./$MP/mpwrite | grep -o '^[^:]*:.*toolexec/saga' | cut -d: -f1"

echo; echo "## One word, one meaning"
run "grep -rwi view --include=*.go . | grep -v '^./scripts/' | wc -l"
run "ls -d view overlay executor/view.go reconciler/view.go 2>/dev/null"
run "grep -rnE 'func \\(e \\*Executor\\) tick\\(|^type tick struct' --include=*.go ."
echo; echo "## Status and reason spellings"
run "grep -rhoE '\\bcodes\\.(Status|Reason)\\w*' --include=*.go . | wc -l"
run "grep -rhoE '\\b(topics|wire)\\.(Status|Reason|Terminal\\b)\\w*' --include=*.go . --exclude-dir=scripts | wc -l"
run "grep -rnE '^\\s+[A-Z]\\w*\\s+= codes\\.|return codes\\.Terminal' --include=*.go topics wire 2>/dev/null | wc -l"   # re-exports

echo; echo "## Pebble key spaces: files that define one"
run "grep -rlnE '(space[A-Z][a-z]+\\s+= '\"'\"'.'\"'\"'|[a-zA-Z]*[pP]refix\\s+= \\[\\]byte\\(\")' --include=*.go . | grep -v _test.go | sort"

echo; echo "## Callers that branch on an error's text"
run "grep -rnE 'strings\\.Contains\\((msg|res\\.Error\\.Message|err\\.Error\\(\\))' --include=*.go . | grep -v _test.go"
echo; echo "## Constants copied with a comment instead of imported"
run "grep -rnE '(maxArgsLimit|baselinePollWait|baselineMaxPoll)\\s+=' --include=*.go ."

echo; echo "## History in code comments (issue numbers, seeds, chaos runs, 'the first version')"
run "grep -rnEi '//.*(\\bissues? [0-9]+|\\bseed [0-9]{4,}|chaos run|first version)' --include=*.go . | grep -v '^./scripts/' | grep -v _test.go | wc -l"
run "grep -rnEi '//.*(\\bissues? [0-9]+|\\bseed [0-9]{4,}|chaos run|first version)' --include=*.go . | grep -v '^./scripts/' | grep _test.go | wc -l"
run "grep -nE '^#+ .*\\(issues? [0-9]+' docs/DESIGN.md | wc -l"
run "grep -n 'crosses each file once per tick' docs/DESIGN.md"

echo; echo "## Dead or test-only code in production files (references outside tests, the declaration included)"
for s in binLen HasRef DefaultMaxArgs NewHTTP MaxRetention MaxPendingTTL SortedKeys totalBits; do
  printf '%-20s %s\n' "$s" "$(grep -rnw "$s" --include=*.go . | grep -v '^./scripts/' | grep -v _test.go | grep -v '^\S*:[0-9]*:\s*//' | wc -l)"
done

echo; echo "## The overlay's sameRecord check: guarded by invariants.Enabled?"
run "grep -n -B3 'sameRecord(' $OVL/overlay.go | grep -c 'invariants.Enabled'"

echo; echo "## History in comments (exit 1 on any) and words that name two types"
run "go run ./scripts/stylefigures -history . | sed -n 1p"
run "go run ./scripts/stylefigures -words . | sed -n 1p"
