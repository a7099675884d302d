package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Invoice is the application's own data: an invoice, written by whichever
// instance holds the "invoice-export" lock, with that lock's fencing token.
type Invoice struct {
	ent.Schema
}

// Fields of the Invoice.
func (Invoice) Fields() []ent.Field {
	return []ent.Field{
		field.String("number").Unique(),
		field.Int64("token").Positive().Comment("fencing token of the lock it was written under"),
	}
}
