package cachetest_test

import (
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
)

func TestNewForTest(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 3, 4)
	c := cachetest.NewForTest(t, pgs, pods)
	want := cache.SortInfo{Created: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Namespace: "ns"}
	for _, p := range pods {
		if member, ok, msg := c.Enqueueable(p); !member || !ok {
			t.Errorf("Enqueueable(%s) = (%v, %v, %q), want an enqueueable member", p.Name, member, ok, msg)
		}
		want.Name = p.Labels[cache.PodGroupLabel]
		if got := c.SortInfo(p); !got.Created.Equal(want.Created) || got.Namespace != want.Namespace || got.Name != want.Name || got.Priority != 0 {
			t.Errorf("SortInfo(%s) = %+v, want %+v", p.Name, got, want)
		}
	}
	if req, ok := c.MinRequest(cache.GroupKey{Namespace: "ns", Name: "g1"}); !ok || req["cpu"] != 400 {
		t.Errorf("MinRequest(ns/g1) = %v, %v; want 400m cpu from the four members", req, ok)
	}
}

func TestNewForTestEmpty(t *testing.T) {
	c := cachetest.NewForTest(t, nil, nil)
	if _, ok := c.MinRequest(cache.GroupKey{Namespace: "ns", Name: "g0"}); ok {
		t.Errorf("empty cache knows group ns/g0")
	}
}
