package core

import "context"

// guardRegistry holds the job guards and elections of an instance, so that
// Close can shut them down in order before it releases the other locks.
type guardRegistry struct{}

func (g *guardRegistry) shutdown(ctx context.Context) error { return nil }
