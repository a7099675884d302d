package conformance

import (
	"database/sql"
	"testing"
)

// watchPool notes db's statistics and returns a function that, when the
// race case ends, says so if the pool closed more idle connections than a
// round of callers opens: a pool whose SetMaxIdleConns is below the calls
// the kit makes at once closes the surplus after every round and opens it
// again on the next. It is advice, logged, never a failure: the store is not
// at fault.
func watchPool(t testing.TB, db *sql.DB, callers int) func() {
	before := db.Stats()
	return func() {
		after := db.Stats()
		closed := after.MaxIdleClosed - before.MaxIdleClosed
		if closed <= int64(callers) {
			return
		}
		t.Logf("conformance: the database/sql pool closed %d idle connections during this case (%d opened in all; the pool may open %d): it keeps fewer idle connections than the kit's calls need at once, so it reconnects on every race round, which can make the kit ten times slower. Keep them idle: db.SetMaxIdleConns(%d), as many as SetMaxOpenConns.",
			closed, after.OpenConnections, after.MaxOpenConnections, max(after.MaxOpenConnections, 2*callers))
	}
}
