package cli

import (
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
)

// etcdConfig parses etcd://[user:pass@]host:port[,host:port...][/prefix]
// into a client configuration and the store's key prefix. The prefix is
// the path after the first slash, kept exactly; without one, the store's
// default.
func etcdConfig(raw string) (clientv3.Config, string, error) {
	rest, ok := strings.CutPrefix(raw, "etcd://")
	if !ok {
		return clientv3.Config{}, "", usagef("store %q: want etcd://host:port[,host:port...]/prefix", redactEtcd(raw))
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	var cfg clientv3.Config
	if cred, h, ok := strings.Cut(hosts, "@"); ok {
		cfg.Username, cfg.Password, _ = strings.Cut(cred, ":")
		hosts = h
	}
	for h := range strings.SplitSeq(hosts, ",") {
		if h == "" || strings.ContainsAny(h, "?#") {
			return clientv3.Config{}, "", usagef("store %q: want etcd://host:port[,host:port...]/prefix", redactEtcd(raw))
		}
		cfg.Endpoints = append(cfg.Endpoints, h)
	}
	cfg.DialTimeout = 10 * time.Second
	return cfg, prefix, nil
}

// openEtcd opens an etcd store; the client connects lazily, on the first
// call.
func openEtcd(raw string) (*store, error) {
	cfg, prefix, err := etcdConfig(raw)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, usagef("store %q: %v", redactEtcd(raw), err)
	}
	s := etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: prefix})
	return &store{LockStore: s, lister: s, desc: redactEtcd(raw), close: cli.Close}, nil
}

// redactEtcd hides an etcd URL's password.
func redactEtcd(raw string) string {
	rest, _ := strings.CutPrefix(raw, "etcd://")
	cred, hosts, ok := strings.Cut(rest, "@")
	if !ok || strings.Contains(cred, "/") {
		return raw
	}
	user, _, _ := strings.Cut(cred, ":")
	return "etcd://" + user + ":xxxxx@" + hosts
}
