package ocsf

import (
	"encoding/json"
	"fmt"
)

// Validate is a quick structural check of an event's JSON, for code that
// cannot read the schema files: the required attributes of its class in
// OCSF 1.8.0 (base event: activity_id, category_uid, class_uid,
// type_uid = class_uid×100 + activity_id, time in epoch milliseconds,
// severity_id, metadata.version, metadata.product.name/vendor_name;
// activity_name when activity_id is 99; API Activity: actor with at least
// one attribute, api.operation, src_endpoint; Detection Finding:
// finding_info.uid and title). It returns every problem found. Events of
// the AITF Tool Execution class are checked against the base event only.
//
// The test suite's oracle is package ocsfschema, which validates against
// the official schema files themselves.
func Validate(event []byte) []error {
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		return []error{err}
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	num := func(key string) (int64, bool) {
		f, ok := m[key].(float64)
		if !ok {
			bad("%s: required integer missing", key)
			return 0, false
		}
		if f != float64(int64(f)) {
			bad("%s: %v is not an integer", key, f)
		}
		return int64(f), true
	}
	class, okc := num("class_uid")
	activity, oka := num("activity_id")
	category, _ := num("category_uid")
	typ, okt := num("type_uid")
	if okc && oka && okt && typ != class*100+activity {
		bad("type_uid: %d, want class_uid×100+activity_id = %d", typ, class*100+activity)
	}
	if okc && class%100000/1000 != category { // an extension class: ext×100000 + category×1000 + n
		bad("category_uid: %d does not match class_uid %d", category, class)
	}
	if t, ok := num("time"); ok && (t < 1e12 || t > 1e14) {
		bad("time: %d is not epoch milliseconds", t)
	}
	if s, ok := num("severity_id"); ok && (s < 0 || (s > 6 && s != 99)) {
		bad("severity_id: %d out of range", s)
	}
	if activity == 99 && str(m, "activity_name") == "" {
		bad("activity_name: required when activity_id is 99")
	}
	md, _ := m["metadata"].(map[string]any)
	if str(md, "version") == "" {
		bad("metadata.version: required")
	}
	prod, _ := md["product"].(map[string]any)
	if str(prod, "name") == "" && str(prod, "vendor_name") == "" {
		bad("metadata.product: name or vendor_name required")
	}
	switch class {
	case ClassAPIActivity:
		if a, _ := m["actor"].(map[string]any); len(a) == 0 {
			bad("actor: required, with at least one attribute")
		}
		api, _ := m["api"].(map[string]any)
		if str(api, "operation") == "" {
			bad("api.operation: required")
		}
		if e, _ := m["src_endpoint"].(map[string]any); len(e) == 0 {
			bad("src_endpoint: required, with at least one attribute")
		}
		if activity != 99 && (activity < 0 || activity > 4) {
			bad("activity_id: %d is not defined for API Activity", activity)
		}
	case ClassDetectionFinding:
		fi, _ := m["finding_info"].(map[string]any)
		if str(fi, "uid") == "" || str(fi, "title") == "" {
			bad("finding_info.uid and finding_info.title: required")
		}
	}
	return errs
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
