package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestEtcdConfig(t *testing.T) {
	for _, c := range []struct {
		raw, prefix, user, pass string
		endpoints               []string
	}{
		{"etcd://127.0.0.1:2379/locks/", "locks/", "", "", []string{"127.0.0.1:2379"}},
		{"etcd://a:2379,b:2379,c:2379/app/x", "app/x", "", "", []string{"a:2379", "b:2379", "c:2379"}},
		{"etcd://u:p@a:2379", "", "u", "p", []string{"a:2379"}},
	} {
		cfg, prefix, err := etcdConfig(c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if prefix != c.prefix || cfg.Username != c.user || cfg.Password != c.pass || !slices.Equal(cfg.Endpoints, c.endpoints) {
			t.Errorf("%s: endpoints %v, prefix %q, user %q, password %q; want %v, %q, %q, %q", c.raw, cfg.Endpoints, prefix, cfg.Username, cfg.Password, c.endpoints, c.prefix, c.user, c.pass)
		}
	}
	for _, bad := range []string{"etcd:///x", "etcd://a:1,,b:2/x", "etcd://a:1?x=1"} {
		if _, _, err := etcdConfig(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if got := redactEtcd("etcd://u:secret@a:1/p"); strings.Contains(got, "secret") {
		t.Errorf("redactEtcd kept the password: %s", got)
	}
}
