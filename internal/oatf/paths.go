package oatf

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxPathDepth bounds path resolution, as the specification recommends.
const maxPathDepth = 64

var (
	simplePathRe   = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	wildcardPathRe = regexp.MustCompile(`^[A-Za-z0-9_-]+(\[\*\])?(\.[A-Za-z0-9_-]+(\[\*\])?)*$`)
)

// IsSimplePath reports whether p is a simple path: dot-separated segments of
// [A-Za-z0-9_-], or "" for the root.
func IsSimplePath(p string) bool { return p == "" || simplePathRe.MatchString(p) }

// IsWildcardPath reports whether p is a wildcard path: a simple path whose
// segments may end in [*]. Numeric indexes are not allowed.
func IsWildcardPath(p string) bool { return p == "" || wildcardPathRe.MatchString(p) }

// ResolveSimplePath resolves a simple path against v (SDK §5.1.1). found is
// false when a key is missing or a non-object is met mid-path; an explicit
// null is found.
func ResolveSimplePath(path string, v *Value) (result *Value, found bool) {
	if path == "" {
		return v, v != nil
	}
	cur := v
	for i, seg := range strings.Split(path, ".") {
		if i >= maxPathDepth || cur == nil || cur.Kind != Map {
			return nil, false
		}
		m := cur.member(seg)
		if m == nil {
			return nil, false
		}
		cur = m.Value
	}
	return cur, true
}

// ResolveWildcardPath resolves a wildcard path against v (SDK §5.1.2) and
// returns every value it reaches, in document order.
func ResolveWildcardPath(path string, v *Value) []*Value {
	if v == nil {
		return nil
	}
	if path == "" {
		return []*Value{v}
	}
	cur := []*Value{v}
	for i, seg := range strings.Split(path, ".") {
		if i >= maxPathDepth {
			return nil
		}
		key, star := strings.CutSuffix(seg, "[*]")
		var next []*Value
		for _, c := range cur {
			m := c.member(key)
			if m == nil {
				continue
			}
			if !star {
				next = append(next, m.Value)
				continue
			}
			if m.Value.Kind == Seq {
				next = append(next, m.Value.Items...)
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil
		}
	}
	return cur
}

var (
	shortDurationRe = regexp.MustCompile(`^([0-9]+)([dhms])$`)
	isoDurationRe   = regexp.MustCompile(`^P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)S)?)?$`)
)

// maxDuration keeps durations far from time.Duration overflow (100 years).
const maxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration parses an OATF duration (SDK §5.2): "30s", "5m", "1h", "2d",
// or ISO 8601 "P1DT2H3M4S". Integers only; no negatives; "0s" is valid.
func ParseDuration(s string) (time.Duration, error) {
	if m := shortDurationRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, errors.New("duration out of range")
		}
		unit := map[string]time.Duration{"d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second}[m[2]]
		return scale(n, unit)
	}
	m := isoDurationRe.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, errors.New(`invalid duration: use 30s, 5m, 1h, 2d or ISO 8601 such as PT5M`)
	}
	var total time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil {
			return 0, errors.New("duration out of range")
		}
		d, err := scale(n, unit)
		if err != nil {
			return 0, err
		}
		total += d
		if total > maxDuration {
			return 0, errors.New("duration out of range")
		}
	}
	return total, nil
}

func scale(n int64, unit time.Duration) (time.Duration, error) {
	if n > int64(maxDuration/unit) {
		return 0, errors.New("duration out of range")
	}
	return time.Duration(n) * unit, nil
}
