package ocsfschema_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentwarden/warden/internal/ocsf/ocsfschema"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

// apiActivity is a hand-written, valid OCSF 1.8.0 API Activity event.
const apiActivity = `{
  "activity_id": 1, "activity_name": "Create",
  "category_uid": 6, "category_name": "Application Activity",
  "class_uid": 6003, "class_name": "API Activity",
  "type_uid": 600301,
  "time": 1767225600000,
  "severity_id": 1, "severity": "Informational",
  "status_id": 1, "status": "Success",
  "metadata": {"version": "1.8.0", "product": {"name": "p", "vendor_name": "v"}, "profiles": ["trace"]},
  "actor": {"user": {"uid": "alice"}},
  "api": {"operation": "tools/call", "request": {"uid": "7", "data": {"a": [1, "x"]}}},
  "src_endpoint": {"ip": "127.0.0.1", "port": 5000},
  "trace": {"uid": "4bf92f3577b34da6a3ce929d0e0e4736", "span": {"uid": "00f067aa0ba902b7", "start_time": 1767225600000, "end_time": 1767225600001}},
  "unmapped": {"anything": {"goes": true}}
}`

// detectionFinding is a hand-written, valid OCSF 1.8.0 Detection Finding.
const detectionFinding = `{
  "activity_id": 1, "activity_name": "Create",
  "category_uid": 2, "class_uid": 2004, "type_uid": 200401,
  "time": 1767225600000, "severity_id": 3, "severity": "Medium",
  "metadata": {"version": "1.8.0", "product": {"name": "p", "vendor_name": "v"}, "profiles": ["security_control"]},
  "finding_info": {"uid": "f1", "title": "denied", "analytic": {"name": "policy: r", "type_id": 1, "type": "Rule"}},
  "action_id": 2, "action": "Denied", "disposition_id": 2, "disposition": "Blocked",
  "confidence_id": 3, "is_alert": true,
  "evidences": [{"api": {"operation": "tools/call", "request": {"uid": "7"}}}]
}`

// edit returns event with the members of set replaced (a nil value
// deletes), addressed by dotted paths.
func edit(t *testing.T, event string, set map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(event), &m); err != nil {
		t.Fatal(err)
	}
	for path, v := range set {
		keys := strings.Split(path, ".")
		obj := m
		for _, k := range keys[:len(keys)-1] {
			next, ok := obj[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[k] = next
			}
			obj = next
		}
		if v == nil {
			delete(obj, keys[len(keys)-1])
		} else {
			obj[keys[len(keys)-1]] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func problems(ps []ocsfschema.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path + " " + string(p.Code)
	}
	slices.Sort(out)
	return out
}

func TestValidEventsPass(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	for name, ev := range map[string]string{"api activity": apiActivity, "detection finding": detectionFinding} {
		if ps := s.Validate([]byte(ev)); len(ps) > 0 {
			t.Errorf("%s: %v", name, ps)
		}
	}
}

// TestInvalidEventsFail: each hand-written departure from the schema is
// found, at its path, with its code, and nothing else is reported.
func TestInvalidEventsFail(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	cases := []struct {
		name  string
		base  string
		set   map[string]any
		wants []string // "path code", sorted
	}{
		{"not a class: the seed's 7003 is Process Remediation Activity", apiActivity,
			map[string]any{"class_uid": 7003, "type_uid": 700301},
			[]string{"activity_name sibling", "actor profile", "api profile", "category_name category", "category_uid category", "class_name class",
				"command_uid required", "metadata.profiles[0] profile", "process required", "src_endpoint unknown", "trace unknown"}},
		{"no such class", apiActivity, map[string]any{"class_uid": 6999}, []string{"class_uid class"}},
		{"type_uid", apiActivity, map[string]any{"type_uid": 600399}, []string{"type_uid type_uid"}},
		{"type_name", apiActivity, map[string]any{"type_name": "API Activity: Read"}, []string{"type_name type_uid"}},
		{"category", apiActivity, map[string]any{"category_uid": 2, "category_name": "Findings"}, []string{"category_name category", "category_uid category"}},
		{"required, inherited from the base event", apiActivity, map[string]any{"severity_id": nil, "severity": nil}, []string{"severity_id required"}},
		{"required, of the class", apiActivity, map[string]any{"src_endpoint": nil}, []string{"src_endpoint required"}},
		{"required, in an object", apiActivity, map[string]any{"api.request": map[string]any{}}, []string{"api.request.uid required"}},
		{"required, in an inherited object attribute", apiActivity, map[string]any{"metadata.product": nil}, []string{"metadata.product required"}},
		{"required, of an applied profile", apiActivity, map[string]any{"metadata.profiles": []any{"trace", "cloud"}}, []string{"cloud required"}},
		{"an attribute of a profile not applied", apiActivity, map[string]any{"metadata.profiles": []any{}}, []string{"trace profile"}},
		{"a profile the class does not apply", detectionFinding, map[string]any{"metadata.profiles": []any{"security_control", "trace"}}, []string{"metadata.profiles[1] profile"}},
		{"a profile that does not exist", apiActivity, map[string]any{"metadata.profiles": []any{"trace", "tracing"}}, []string{"metadata.profiles[1] profile"}},
		{"the 2004 class has no trace", detectionFinding, map[string]any{"trace": map[string]any{"uid": "t"}}, []string{"trace unknown"}},
		{"unknown attribute in an object", apiActivity, map[string]any{"api.request.id": "7"}, []string{"api.request.id unknown"}},
		{"type: timestamp as a string", apiActivity, map[string]any{"time": "2026-01-01"}, []string{"time type"}},
		{"type: integer", apiActivity, map[string]any{"severity_id": 1.5}, []string{"severity_id type"}},
		{"type: string", apiActivity, map[string]any{"actor.user.uid": 7}, []string{"actor.user.uid type"}},
		{"type: regex of ip_t", apiActivity, map[string]any{"src_endpoint.ip": "localhost"}, []string{"src_endpoint.ip type"}},
		{"type: range of port_t", apiActivity, map[string]any{"src_endpoint.port": 70000}, []string{"src_endpoint.port type"}},
		{"type: an object", apiActivity, map[string]any{"api": "tools/call"}, []string{"api type"}},
		{"type: an array", detectionFinding, map[string]any{"evidences": map[string]any{"api": map[string]any{"operation": "x"}}}, []string{"evidences type"}},
		{"type: null", apiActivity, map[string]any{"message": json.RawMessage(`null`)}, []string{"message type"}},
		{"enum", apiActivity, map[string]any{"severity_id": 7, "severity": nil}, []string{"severity_id enum"}},
		{"enum of the class", apiActivity, map[string]any{"activity_id": 5, "type_uid": 600305, "activity_name": nil}, []string{"activity_id enum"}},
		{"sibling caption", apiActivity, map[string]any{"severity": "High"}, []string{"severity sibling"}},
		{"sibling caption of the class's enum", apiActivity, map[string]any{"activity_name": "tools/call"}, []string{"activity_name sibling"}},
		{"sibling caption in an object", detectionFinding, map[string]any{"finding_info.analytic.type": "Behavioral"}, []string{"finding_info.analytic.type sibling"}},
		{"99 Other without its label", apiActivity, map[string]any{"activity_id": 99, "type_uid": 600399, "activity_name": nil}, []string{"activity_name sibling"}},
		{"at_least_one", apiActivity, map[string]any{"actor": map[string]any{}}, []string{"actor constraint"}},
		{"at_least_one, inherited by an object", apiActivity, map[string]any{"actor.user": map[string]any{"email_addr": "a@example.com"}}, []string{"actor.user constraint"}},
		{"version", apiActivity, map[string]any{"metadata.version": "1.7.0"}, []string{"metadata.version version"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := edit(t, c.base, c.set)
			got := problems(s.Validate(ev))
			if !slices.Equal(got, c.wants) {
				t.Errorf("problems %q, want %q\n%v", got, c.wants, s.Validate(ev))
			}
		})
	}
}

func TestJustOne(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	ev := func(extra string) []byte {
		return []byte(`{"activity_id": 1, "category_uid": 3, "class_uid": 3003, "type_uid": 300301, "time": 1767225600000,
		  "severity_id": 1, "metadata": {"version": "1.8.0", "product": {"name": "p"}}, "user": {"name": "u"}` + extra + `}`)
	}
	if ps := s.Validate(ev(`, "privileges": ["admin"]`)); len(ps) > 0 {
		t.Errorf("one of privileges, group: %v", ps)
	}
	for _, extra := range []string{``, `, "privileges": ["admin"], "group": {"name": "g"}`} {
		if got := problems(s.Validate(ev(extra))); !slices.Equal(got, []string{" constraint"}) {
			t.Errorf("%q: problems %q, want the just_one constraint", extra, got)
		}
	}
}

func TestNotJSON(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	for _, ev := range []string{`[]`, `{"class_uid": 6003,`, `{"class_uid": 6003, "class_uid": 6003}`} {
		if got := problems(s.Validate([]byte(ev))); !slices.Equal(got, []string{" json"}) {
			t.Errorf("%s: problems %q, want json", ev, got)
		}
	}
}

func TestProblemString(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	ps := s.Validate(edit(t, apiActivity, map[string]any{"api.request": map[string]any{}}))
	if len(ps) != 1 || ps[0].String() != "api.request.uid: required attribute of request is missing [required]" {
		t.Errorf("got %v", ps)
	}
	ps = s.Validate(edit(t, apiActivity, map[string]any{"actor": map[string]any{}}))
	if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "actor: actor needs at least one of ") {
		t.Errorf("got %v", ps)
	}
}

// TestRecordIntegrity19: the 1.9 record_integrity profile's attestation
// validates, and its object's own requirements are checked.
func TestRecordIntegrity19(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	base := strings.Replace(apiActivity, `"version": "1.8.0"`, `"version": "1.9.0-dev"`, 1)
	base = strings.Replace(base, `"profiles": ["trace"]`, `"profiles": ["trace", "record_integrity"], "uid": "audit:2"`, 1)
	att := map[string]any{
		"chain_uid":   "audit-log",
		"uid":         "audit:2",
		"fingerprint": map[string]any{"algorithm_id": 3, "algorithm": "SHA-256", "value": strings.Repeat("ab", 32)},
		"prev_event":  map[string]any{"uid": "audit:1", "fingerprint": map[string]any{"algorithm_id": 3, "value": strings.Repeat("cd", 32)}},
	}
	if ps := s.Validate(edit(t, base, map[string]any{"attestation_list": []any{att}})); len(ps) > 0 {
		t.Errorf("valid attestation: %v", ps)
	}
	bad := map[string]any{"chain_uid": "audit-log", "prev_event": map[string]any{"fingerprint": map[string]any{"value": "x"}}}
	got := problems(s.Validate(edit(t, base, map[string]any{"attestation_list": []any{bad}})))
	want := []string{"attestation_list[0] constraint", "attestation_list[0].prev_event.fingerprint.algorithm_id required", "attestation_list[0].prev_event.uid required"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
	// In 1.8.0 the profile does not exist.
	s18 := ocsfschematest.Schema(t, ocsfschematest.V180)
	got = problems(s18.Validate(edit(t, strings.Replace(base, "1.9.0-dev", "1.8.0", 1), map[string]any{"attestation_list": []any{att}})))
	if !slices.Equal(got, []string{"attestation_list unknown", "metadata.profiles[1] profile"}) {
		t.Errorf("1.8.0: problems %q", got)
	}
}

// TestExtension: an extension's class gets the extension's uid space, its
// includes resolve against the core, and its events must name it.
func TestExtension(t *testing.T) {
	ocsfschematest.Schema(t, ocsfschematest.V180) // skips without the snapshot
	ext := fstest.MapFS{
		"extension.json":  {Data: []byte(`{"caption": "T", "description": "d", "name": "t", "uid": 12, "version": "0.1.0"}`)},
		"dictionary.json": {Data: []byte(`{"attributes": {"gadget": {"caption": "G", "description": "d", "type": "string_t"}}}`)},
		"events/gadget_activity.json": {Data: []byte(`{"uid": 5, "caption": "Gadget Activity", "extends": "application", "name": "gadget_activity",
		  "attributes": {"$include": ["profiles/trace.json"], "activity_id": {"enum": {"1": {"caption": "Poke"}}}, "gadget": {"requirement": "required"}}}`)},
	}
	dir := ocsfschematest.Root() + "/../shared/ocsf-schema/1.8.0"
	s2, err := ocsfschema.Load(os.DirFS(dir), ext)
	if err != nil {
		t.Fatal(err)
	}
	c := s2.Class(1206005)
	if c == nil || c.Extension == nil || c.Extension.Name != "t" {
		t.Fatalf("class 1206005 = %v, want gadget_activity of extension t", c)
	}
	ev := func(extra string) []byte {
		return []byte(`{"activity_id": 1, "activity_name": "Poke", "category_uid": 6, "class_uid": 1206005, "type_uid": 120600501,
		  "time": 1767225600000, "severity_id": 1, "trace": {"uid": "t"},
		  "metadata": {"version": "1.8.0", "product": {"name": "p"}, "profiles": ["trace"]` + extra)
	}
	if ps := s2.Validate(ev(`, "extensions": [{"name": "t", "uid": "12", "version": "0.1.0"}]}, "gadget": "g"}`)); len(ps) > 0 {
		t.Errorf("valid extension event: %v", ps)
	}
	got := problems(s2.Validate(ev(`, "extensions": [{"name": "t", "uid": "13", "version": "0.1.0"}]}}`)))
	if want := []string{"gadget required", "metadata.extensions[0].uid extension"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
	got = problems(s2.Validate(ev(`}, "gadget": "g"}`)))
	if want := []string{"metadata.extensions extension"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// TestLoadRefusesBadExtensions: a dictionary attribute that redefines the
// core's, or a class attribute the dictionary lacks, fails Load.
func TestLoadRefusesBadExtensions(t *testing.T) {
	dir := ocsfschematest.Root() + "/../shared/ocsf-schema/1.8.0"
	ocsfschematest.Schema(t, ocsfschematest.V180) // skips without the snapshot
	for name, files := range map[string]fstest.MapFS{
		"redefines compliance": {
			"extension.json":  {Data: []byte(`{"name": "t", "uid": 12}`)},
			"dictionary.json": {Data: []byte(`{"attributes": {"compliance": {"caption": "C", "description": "d", "type": "object"}}}`)},
		},
		"undefined attribute": {
			"extension.json":       {Data: []byte(`{"name": "t", "uid": 12}`)},
			"events/x.json":        {Data: []byte(`{"uid": 1, "caption": "X", "extends": "application", "name": "x", "attributes": {"nonesuch": {"requirement": "optional"}}}`)},
			"events/readme.txt":    {Data: []byte(`not a class`)},
			"objects/.placeholder": {Data: nil},
		},
	} {
		if _, err := ocsfschema.Load(os.DirFS(dir), files); err == nil {
			t.Errorf("%s: loaded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// FuzzValidate: any input gets problems, each with a code and a message,
// or none; never a panic.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(apiActivity))
	f.Add([]byte(detectionFinding))
	f.Add([]byte(`{"class_uid": 6003, "activity_id": "1", "metadata": {"profiles": [1, null], "extensions": [7]}, "api": []}`))
	f.Add([]byte(`{"class_uid": 2004, "evidences": [null, {"api": {"request": {"uid": 1e300}}}], "type_name": 5}`))
	s := ocsfschematest.Schema(f, ocsfschematest.V180)
	f.Fuzz(func(t *testing.T, event []byte) {
		for _, p := range s.Validate(event) {
			if p.Code == "" || p.Message == "" {
				t.Fatalf("problem without code or message: %+v", p)
			}
		}
	})
}

// TestOfficialExtensions loads the schema's own extensions (linux, macos,
// windows): their classes get the uids OCSF publishes (Windows Registry
// Key Activity is 201001), their patches add to core objects, and their
// profiles are named extension/profile.
func TestOfficialExtensions(t *testing.T) {
	ocsfschematest.Schema(t, ocsfschematest.V180) // skips without the snapshot
	dir := ocsfschematest.Root() + "/../shared/ocsf-schema/1.8.0"
	s, err := ocsfschema.Load(os.DirFS(dir), os.DirFS(dir+"/extensions/linux"), os.DirFS(dir+"/extensions/macos"), os.DirFS(dir+"/extensions/windows"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Class(201001); c == nil || c.Name != "registry_key_activity" || c.Extension.Name != "win" {
		t.Fatalf("class 201001 = %v, want registry_key_activity of extension win", c)
	}
	proc := s.Object("process")
	if a := proc.Attrs["auid"]; a == nil || a.Profile != "linux/linux_users" {
		t.Errorf("process.auid = %+v, want an attribute of profile linux/linux_users", a)
	}
	if a := proc.Attrs["hosted_services"]; a == nil || a.Type != "win_service" || !a.IsArray {
		t.Errorf("process.hosted_services = %+v, want the windows patch's array of win_service", a)
	}
	if a := s.Object("evidences").Attrs["reg_key"]; a == nil {
		t.Error("evidences has no reg_key: the windows patch was not applied")
	}
}
