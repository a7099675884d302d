package shop

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/leasehold/leasehold/core"
)

// ExportHandler runs the invoice export now, through job's guards, so that
// it never runs alongside a scheduled run on any instance. It answers 204 No
// Content when the export ran, 409 Conflict when it did not start (a run is
// in progress, or another instance owns the job), and 500 when it failed.
// Mount it on POST, behind your authentication.
func ExportHandler(job *core.Job, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The export goes on if the caller hangs up: stopping between the
		// upload and the marking is what must not happen. Shutdown still
		// bounds it.
		err := job.Run(context.WithoutCancel(r.Context()))
		switch {
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
		case errors.Is(err, core.ErrSkipped):
			http.Error(w, err.Error(), http.StatusConflict)
		default:
			log.Error("invoice export by hand failed", "err", err)
			http.Error(w, "invoice export failed", http.StatusInternalServerError)
		}
	})
}
