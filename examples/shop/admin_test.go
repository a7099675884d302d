package shop

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// adminServer serves n's admin endpoint, as the shop's main does.
func adminServer(t *testing.T, n *node) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("POST /admin/invoice-exports", ExportHandler(n.jobs.Export, n.shop.Log))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/admin/invoice-exports", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestExportByHand(t *testing.T) {
	c := newCluster(t)
	owner, other := c.nodes[0], c.nodes[1]
	ownerAdmin, otherAdmin := adminServer(t, owner), adminServer(t, other)

	// The first request takes the job for its instance and runs the export.
	if code, body := post(t, ownerAdmin); code != http.StatusNoContent {
		t.Fatalf("POST: %d %s, want 204", code, body)
	}
	if got := len(c.accounting.booked()); got != 1 {
		t.Fatalf("%d batches booked, want 1", got)
	}

	// Another instance does not run the job while its owner is up.
	code, body := post(t, otherAdmin)
	if code != http.StatusConflict || !strings.Contains(body, "it runs on another instance") {
		t.Fatalf("POST to another instance: %d %s, want 409", code, body)
	}

	// 02:00: the scheduled run is uploading when the request comes.
	c.advance(time.Minute)
	addOrder(t, c.db, "ord-1004")
	uploads := c.accounting.hold()
	scheduled := c.startRun(owner, export)
	uploads.waitFor(t, 1)
	code, body = post(t, ownerAdmin)
	if code != http.StatusConflict || !strings.Contains(body, "a run is still in progress") {
		t.Fatalf("POST during the scheduled run: %d %s, want 409", code, body)
	}
	uploads.release()
	if err := <-scheduled; err != nil {
		t.Fatal(err)
	}
	if got := len(c.accounting.booked()); got != 2 {
		t.Fatalf("%d batches booked, want 2", got)
	}
}
