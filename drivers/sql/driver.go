package sqlstore

// Driver is what a driver built on the engine tells it about itself, so
// that every such driver constructs its Store the same way, in one place:
// the caller's options apply first, then the driver's name and placeholder
// style, which win (a caller's [WithPlaceholder] would send statements the
// client cannot fill in, and a store's errors name its own package).
type Driver struct {
	// Name is the name the store gives itself in errors and in String,
	// such as "gormstore".
	Name string
	// Placeholder is the placeholder style of the driver's client; zero
	// for the dialect's own.
	Placeholder Placeholder
}

// New returns a Store of dialect d that runs its statements through e, as
// [NewWithExecutor] does, under the driver's name and placeholder style.
func (dr Driver) New(e Executor, d Dialect, opts ...Option) (*Store, error) {
	return NewWithExecutor(e, d, dr.options(opts)...)
}

// NewFromQuerier returns a Store of dialect d over a database/sql handle,
// as [NewFromQuerier] does, under the driver's name and placeholder style.
func (dr Driver) NewFromQuerier(q Querier, d Dialect, opts ...Option) (*Store, error) {
	return NewFromQuerier(q, d, dr.options(opts)...)
}

// options are opts followed by the driver's own.
func (dr Driver) options(opts []Option) []Option {
	all := make([]Option, 0, len(opts)+2)
	all = append(all, opts...)
	all = append(all, WithName(dr.Name))
	if dr.Placeholder != 0 {
		all = append(all, WithPlaceholder(dr.Placeholder))
	}
	return all
}
