#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target in the main module, one after another,
# each for $FUZZTIME (default 30s):
#
#   go test -tags=$TAGS -run='^$' -fuzz='^FuzzName$' -fuzztime=$FUZZTIME ./pkg
#
# Targets are found by grepping *_test.go for `func FuzzXxx(`. FUZZ, if set,
# is an extended regexp; only targets whose name matches it run. A failing
# target does not stop the others; the exit status is 1 if any failed (go
# test then has written the crashing input under the package's
# testdata/fuzz/FuzzName/, to be committed as a regression case).
#
# KEEP=N (default 0) also keeps up to N of the inputs each target found
# interesting (go test holds them in its cache) in the package's
# testdata/fuzz/FuzzName/, next to the regression cases: that is how the
# committed corpora grow. Every file there runs as a test case in `go test`,
# so only inputs up to 4 KiB are kept.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-}
KEEP=${KEEP:-0}
CACHE=$(go env GOCACHE)/fuzz
TAGS=${TAGS-integration}

targets=()
while IFS= read -r -d '' file; do
	dir=$(dirname "$file")
	while IFS= read -r name; do
		[[ -z $FUZZ || $name =~ $FUZZ ]] || continue
		targets+=("$dir $name")
	done < <(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' "$file")
done < <(find . \( -name .git -o -name .cache -o -name testdata -o -name node_modules -o -name tools \) -prune \
	-o -name '*_test.go' -print0 | sort -z)

if ((${#targets[@]} == 0)); then
	echo "fuzz: no fuzz targets found${FUZZ:+ matching $FUZZ}"
	exit 0
fi

echo "fuzz: ${#targets[@]} target(s), $FUZZTIME each"
failed=()
for t in "${targets[@]}"; do
	read -r dir name <<<"$t"
	echo "== $dir $name"
	if ! go test -tags="$TAGS" -run='^$' -fuzz="^$name\$" -fuzztime="$FUZZTIME" "$dir" </dev/null; then
		failed+=("$dir $name")
	fi
	if ((KEEP > 0)); then
		found="$CACHE/$(go list "$dir")/$name"
		keep="$dir/testdata/fuzz/$name"
		have=$( (find "$keep" -type f 2>/dev/null || true) | wc -l)
		n=0
		while IFS= read -r f; do
			((have + n < KEEP)) || break
			[[ -e $keep/$(basename "$f") ]] && continue
			mkdir -p "$keep"
			cp "$f" "$keep/"
			n=$((n + 1))
		done < <(find "$found" -type f -size -4k 2>/dev/null | sort)
		echo "fuzz: kept $n new input(s) in $keep"
	fi
done

echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "  FAIL $f"; done
((${#failed[@]} == 0))
