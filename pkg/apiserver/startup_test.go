package apiserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStartupRunsStepsInOrderAndReportsFailuresOnReadyz(t *testing.T) {
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	watchFailures := 2
	s := &startup{}
	if err := s.Check(nil); err == nil {
		t.Fatal("ready before starting")
	}
	started := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go s.run(ctx, []startStep{
		{"watch the main cluster", func(context.Context) error {
			mu.Lock()
			fail := watchFailures > 0
			watchFailures--
			mu.Unlock()
			if fail {
				record("watch failed")
				return errors.New("customresourcedefinitions is forbidden")
			}
			record("watch")
			return nil
		}},
		{"advertise the profiles", func(context.Context) error { record("advertise"); return nil }},
	}, func(context.Context) { record("controller"); close(started) })

	// While the first step fails, readyz names it and why.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.Check(nil)
		if err != nil && strings.Contains(err.Error(), "watch the main cluster: customresourcedefinitions is forbidden") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never reported the failing step: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the controller never started")
	}
	if err := s.Check(nil); err != nil {
		t.Fatalf("not ready after the start sequence: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "watch failed,watch failed,watch,advertise,controller"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func TestStartupStopsWithItsContext(t *testing.T) {
	s := &startup{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	s.run(ctx, []startStep{{"never works", func(context.Context) error { return errors.New("no") }}}, func(context.Context) { ran = true })
	if ran || s.Check(nil) == nil {
		t.Fatal("a cancelled start sequence started the controller or turned ready")
	}
}
