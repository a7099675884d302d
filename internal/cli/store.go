package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
	"github.com/redis/rueidis"
)

// storeEnv names the environment variable that gives the store when --store
// is not set.
const storeEnv = "LEASEHOLD_STORE"

// openTimeout bounds connecting to a store and migrating its table.
const openTimeout = 15 * time.Second

// store is an opened lock store, with what the commands need from it.
type store struct {
	core.LockStore
	lister core.Lister // nil if the store cannot list its locks
	desc   string      // the URL, password redacted, for messages
	close  func() error
}

// String describes the store for the start-up log: the driver's own
// description and where it is.
func (s *store) String() string {
	if d, ok := s.LockStore.(fmt.Stringer); ok {
		if desc := d.String(); !strings.Contains(desc, strings.TrimPrefix(s.desc, "sqlite://")) {
			return desc + " at " + s.desc
		} else {
			return desc
		}
	}
	return s.desc
}

func (s *store) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// usageError is an error in what the user typed: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

const storeSchemes = "sqlite:///path/to/locks.db, postgres://..., mysql://user:pass@host:port/db, redis://host:port/db or etcd://host:port[,host:port...]/prefix"

// storeURL returns the store URL to use: the flag's value, else
// $LEASEHOLD_STORE, else the per-user SQLite file.
func storeURL(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := os.Getenv(storeEnv); v != "" {
		return v, nil
	}
	path, err := defaultSQLitePath()
	if err != nil {
		return "", err
	}
	return "sqlite://" + path, nil
}

// defaultSQLitePath is $XDG_STATE_HOME/leasehold/locks.db, or
// ~/.local/state/leasehold/locks.db when XDG_STATE_HOME is not set.
func defaultSQLitePath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no default store (%v): give --store or $%s", err, storeEnv)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "leasehold", "locks.db"), nil
}

// openStore opens the store a URL names and creates its table if needed.
func openStore(ctx context.Context, raw string) (*store, error) {
	scheme, _, ok := strings.Cut(raw, ":")
	if !ok || scheme == "" {
		return nil, usagef("store %q is not a URL: want %s", raw, storeSchemes)
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	var (
		st  *store
		err error
	)
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		return openSQLite(raw)
	case "postgres", "postgresql":
		st, err = openPostgres(ctx, raw)
	case "mysql", "mariadb":
		st, err = openMySQL(ctx, raw)
	case "redis", "rediss", "valkey", "valkeys":
		st, err = openRedis(raw)
	case "etcd":
		st, err = openEtcd(raw)
	default:
		return nil, usagef("unsupported store %q: want %s", redact(raw), storeSchemes)
	}
	var usage *usageError
	if err != nil && !errors.As(err, &usage) {
		err = withHint(err, raw)
	}
	return st, err
}

// sqlitePath returns the file a sqlite: URL names: sqlite:///abs/path,
// sqlite://relative/path or sqlite:path.
func sqlitePath(raw string) (string, error) {
	_, rest, _ := strings.Cut(raw, ":")
	path := strings.TrimPrefix(rest, "//")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return "", usagef("store %q: a sqlite URL takes no parameters", raw)
	}
	if path == "" {
		return "", usagef("store %q names no file: want sqlite:///path/to/locks.db", raw)
	}
	return path, nil
}

func openSQLite(raw string) (*store, error) {
	path, err := sqlitePath(raw)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store %s: %w", raw, err)
	}
	s, err := sqlitestore.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", raw, err)
	}
	st := &store{LockStore: s, desc: "sqlite://" + path, close: s.Close}
	if l, ok := core.LockStore(s).(core.Lister); ok {
		st.lister = l
	}
	return st, nil
}

func openPostgres(ctx context.Context, raw string) (*store, error) {
	if _, err := pgx.ParseConfig(raw); err != nil {
		return nil, usagef("store %q: %v", redact(raw), err)
	}
	db, err := sql.Open("pgx", raw)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", redact(raw), err)
	}
	return openSQL(ctx, db, sqlstore.Postgres, redact(raw))
}

// mysqlConfig turns mysql://user:pass@host:port/db?param=value into the
// driver's configuration. Parameters are go-sql-driver/mysql's DSN
// parameters (tls, timeout, ...); parseTime is on unless they say otherwise.
func mysqlConfig(raw string) (*mysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usagef("store %q is not a valid URL: %v", redact(raw), errors.Unwrap(err))
	}
	if u.Opaque != "" {
		return nil, usagef("store %q: want mysql://user:pass@host:port/db", redact(raw))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, usagef("store %q names no database: want mysql://user:pass@host:port/db", redact(raw))
	}
	q := u.Query()
	if !q.Has("parseTime") {
		q.Set("parseTime", "true")
	}
	if !q.Has("timeout") {
		q.Set("timeout", "10s")
	}
	// Parse the parameters the way the driver does, then fill in the rest.
	cfg, err := mysql.ParseDSN("/?" + q.Encode())
	if err != nil {
		return nil, usagef("store %q: %v", redact(raw), err)
	}
	cfg.DBName = db
	cfg.Net = "tcp"
	host := u.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if u.Port() == "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
	}
	cfg.Addr = host
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	// The driver prints some connection errors on its own logger; they are
	// returned as errors too, and leasehold reports them on one line.
	cfg.Logger = &mysql.NopLogger{}
	return cfg, nil
}

func openMySQL(ctx context.Context, raw string) (*store, error) {
	cfg, err := mysqlConfig(raw)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", redact(raw), err)
	}
	return openSQL(ctx, sql.OpenDB(conn), sqlstore.MySQL, redact(raw))
}

// openSQL checks that db answers and creates the locks table if needed.
func openSQL(ctx context.Context, db *sql.DB, d sqlstore.Dialect, desc string) (*store, error) {
	fail := func(err error) (*store, error) {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", desc, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	s, err := sqlstore.New(db, d)
	if err != nil {
		return fail(err)
	}
	if err := s.Migrate(ctx); err != nil {
		return fail(err)
	}
	return &store{LockStore: s, lister: s, desc: desc, close: db.Close}, nil
}

// redisPrefixParam is the Redis URL parameter that sets the store's key
// prefix (rueidisstore.WithPrefix); rueidis.ParseURL ignores it.
const redisPrefixParam = "key_prefix"

// openRedis connects to the Redis or Valkey server, Sentinel or Cluster of
// a URL in the form rueidis.ParseURL takes: redis://user:pass@host:port/db,
// rediss:// for TLS, a Cluster as redis://host1:port1?addr=host2:port2, a
// Sentinel group with ?master_set=name. The client dials (with rueidis's
// dial timeout, or dial_timeout=) before it returns.
func openRedis(raw string) (*store, error) {
	opt, err := rueidis.ParseURL(raw)
	if err != nil {
		return nil, usagef("store %q: %v", redact(raw), err)
	}
	var opts []rueidisstore.Option
	if u, err := url.Parse(raw); err == nil && u.Query().Has(redisPrefixParam) {
		opts = append(opts, rueidisstore.WithPrefix(u.Query().Get(redisPrefixParam)))
	}
	opt.DisableCache = true // no client-side caching: every call is a script
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", redact(raw), err)
	}
	s, err := rueidisstore.New(client, opts...)
	if err != nil {
		client.Close()
		return nil, usagef("store %q: %v", redact(raw), err)
	}
	return &store{LockStore: s, lister: s, desc: redact(raw), close: func() error { client.Close(); return nil }}, nil
}

// redact hides the password of a URL, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		return u.Redacted()
	}
	// Unparsable: hide everything before the host, which may hold a password.
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		scheme, _, _ := strings.Cut(raw, ":")
		return scheme + "://xxxxx" + raw[at:]
	}
	return raw
}
