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

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-}
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
done

echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "  FAIL $f"; done
((${#failed[@]} == 0))
