package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// crc16 is Redis Cluster's key hash (CRC-16/XMODEM).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotOf is the slot of a lock key: the store hash-tags the whole key.
func slotOf(key string) int { return int(crc16(key) % 16384) }

// nodeDo runs one command on node alone.
func nodeDo(t *testing.T, node *testserver.Server, args ...string) rueidis.RedisResult {
	t.Helper()
	opt, err := rueidis.ParseURL(node.DSN)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache, opt.ForceSingleClient = true, true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Do(context.Background(), c.B().Arbitrary(args...).Build())
}

// TestClusterSlotMigration: an instance holds 330 locks with batch
// renewal, 30 of them in one slot, which then moves to another master one
// key per MIGRATE, 20ms apart, while a second instance keeps trying to
// take the slot's keys. No lock outside the slot is lost, no key is
// granted twice, and every error of the second instance is typed. Five
// rounds.
func TestClusterSlotMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("migrates cluster slots")
	}
	cl := testserver.PrivateRedisCluster(t, 3, 0)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	store, err := rueidisstore.New(client, rueidisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 3 * time.Second
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	for r := range 5 {
		// 30 keys of one slot, 300 others.
		slot := slotOf(fmt.Sprintf("r%d/k0", r))
		var inSlot, others []string
		for i := 0; len(inSlot) < 30 || len(others) < 300; i++ {
			key := fmt.Sprintf("r%d/k%d", r, i)
			switch {
			case slotOf(key) == slot && len(inSlot) < 30:
				inSlot = append(inSlot, key)
			case slotOf(key) != slot && len(others) < 300:
				others = append(others, key)
			}
		}
		a, err := core.New(store, core.WithDefaultTTL(ttl), core.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		locks := map[string]*core.Lock{}
		for _, key := range append(append([]string(nil), inSlot...), others...) {
			lk, err := a.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			locks[key] = lk
		}
		src, dst := ownerOf(t, cl, slot), (*testserver.Server)(nil)
		for _, m := range cl.Masters {
			if m != src {
				dst = m
				break
			}
		}
		srcID, _ := nodeDo(t, src, "CLUSTER", "MYID").ToString()
		dstID, _ := nodeDo(t, dst, "CLUSTER", "MYID").ToString()
		s := strconv.Itoa(slot)

		b, err := core.New(store, core.WithDefaultTTL(ttl), core.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		untyped, notAcquired, notRun, doubles := 0, 0, 0, 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := inSlot[i%len(inSlot)]
				lk, err := b.Acquire(ctx, key)
				mu.Lock()
				switch {
				case err == nil:
					if locks[key].Held() {
						doubles++
					}
					lk.Release(ctx)
				case errors.Is(err, core.ErrNotAcquired):
					notAcquired++
				case errors.Is(err, rueidisstore.ErrNotRun):
					notRun++
				default:
					untyped++
					t.Errorf("round %d: untyped error during the migration: %v", r, err)
				}
				mu.Unlock()
			}
		}()
		nodeDo(t, dst, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
		nodeDo(t, src, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID)
		moved := 0
		for {
			keys, err := nodeDo(t, src, "CLUSTER", "GETKEYSINSLOT", s, "1").AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) == 0 {
				break
			}
			if err := nodeDo(t, src, "MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), keys[0], "0", "5000").Error(); err != nil {
				t.Fatalf("MIGRATE %s: %v", keys[0], err)
			}
			moved++
			time.Sleep(20 * time.Millisecond)
		}
		for _, m := range cl.Masters {
			nodeDo(t, m, "CLUSTER", "SETSLOT", s, "NODE", dstID)
		}
		time.Sleep(ttl)
		close(stop)
		wg.Wait()
		lostIn, lostOut := 0, 0
		for key, lk := range locks {
			if lk.Held() {
				continue
			}
			if slotOf(key) == slot {
				lostIn++
			} else {
				lostOut++
				t.Errorf("round %d: %s, outside the migrated slot, lost: %v", r, key, context.Cause(lk.Context()))
			}
		}
		t.Logf("round %d: slot %d (%d Redis keys moved one by one): lost %d of the slot's %d locks, %d of the %d others; the second instance: %d not acquired, %d ErrNotRun, %d untyped errors, %d double grants",
			r, slot, moved, lostIn, len(inSlot), lostOut, len(others), notAcquired, notRun, untyped, doubles)
		if doubles != 0 {
			t.Errorf("round %d: %d double grants", r, doubles)
		}
		a.Close(ctx)
		b.Close(ctx)
	}
}

// ownerOf returns the master that serves slot.
func ownerOf(t *testing.T, cl *testserver.PrivateCluster, slot int) *testserver.Server {
	t.Helper()
	for _, m := range cl.Masters {
		n, err := nodeDo(t, m, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)).AsInt64()
		if err == nil && n > 0 {
			return m
		}
	}
	t.Fatalf("no master holds keys of slot %d", slot)
	return nil
}
