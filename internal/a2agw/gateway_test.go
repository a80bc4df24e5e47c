package a2agw

import (
	"strings"
	"testing"
)

func TestNewRefusesBadOptions(t *testing.T) {
	ok := Options{Upstream: "http://127.0.0.1:1/a2a", PublicURL: "https://gw.example/a2a"}
	if _, err := New(ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for name, edit := range map[string]func(*Options){
		"no upstream":      func(o *Options) { o.Upstream = "" },
		"no public URL":    func(o *Options) { o.PublicURL = "" },
		"relative card":    func(o *Options) { o.CardURL = "/card.json" },
		"file upstream":    func(o *Options) { o.Upstream = "file:///etc/passwd" },
		"invalid card key": func(o *Options) { o.CardKeys = append(o.CardKeys, *testKey(t, "k")); o.CardKeys[0].Key = nil },
	} {
		o := ok
		edit(&o)
		if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "a2agw:") {
			t.Errorf("%s: New = %v, want an error", name, err)
		}
	}
}
