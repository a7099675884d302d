// Package example is an application with an ent client of its own
// (package ent beside it, generated from ent/schema) that takes leasehold's
// locks on the same driver: see its Examples, and docs/ent.md.
package example
