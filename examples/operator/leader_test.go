package operator_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestLeaderElection: two operators configured as cmd/kplan-operator configures
// them (leader election on, the Lease in the operator's namespace, released on
// stop), both as the operator's ServiceAccount with only config/rbac: one holds
// the Lease, the other waits until the first stops, then takes over. This is
// what keeps an upgrade (old and new pod side by side) from running two
// ModelServing controllers at once.
func TestLeaderElection(t *testing.T) {
	const id = "kplan-operator-leader-test"
	start := func() (ctrl.Manager, context.CancelFunc, chan error) {
		t.Helper()
		d, r, rp := 4*time.Second, 3*time.Second, 200*time.Millisecond
		mgr, err := ctrl.NewManager(operCfg, ctrl.Options{
			Scheme:                        scheme,
			Metrics:                       metricsserver.Options{BindAddress: "0"},
			LeaderElection:                true,
			LeaderElectionID:              id,
			LeaderElectionNamespace:       operatorNamespace,
			LeaderElectionReleaseOnCancel: true,
			LeaseDuration:                 &d,
			RenewDeadline:                 &r,
			RetryPeriod:                   &rp,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return mgr, cancel, done
	}
	first, stopFirst, firstDone := start()
	defer func() { stopFirst(); <-firstDone }()
	select {
	case <-first.Elected():
	case err := <-firstDone:
		t.Fatalf("the first operator stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first operator never became leader (Lease RBAC?)")
	}
	second, stopSecond, secondDone := start()
	defer func() { stopSecond(); <-secondDone }()
	select {
	case <-second.Elected():
		t.Fatal("the second operator became leader while the first holds the Lease")
	case err := <-secondDone:
		t.Fatalf("the second operator stopped: %v", err)
	case <-time.After(2 * time.Second):
	}
	var lease coordinationv1.Lease
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: id}, &lease); err != nil {
		t.Fatalf("the Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("the Lease has no holder: %+v", lease.Spec)
	}
	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatalf("the first operator: %v", err)
	}
	firstDone <- nil // for the deferred wait
	select {
	case <-second.Elected():
	case err := <-secondDone:
		t.Fatalf("the second operator stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the second operator did not take over after the first stopped")
	}
}

// TestLeaderElectionAfterCrash: of the two replicas config/manager runs, the one
// holding the Lease dies without releasing it (a killed pod, a lost node); the other
// takes over once the lease expires, and not before.
func TestLeaderElectionAfterCrash(t *testing.T) {
	const id = "kplan-operator-crash-test"
	d, r, rp := 4*time.Second, 3*time.Second, 200*time.Millisecond
	start := func(release bool) (ctrl.Manager, context.CancelFunc, chan error) {
		t.Helper()
		mgr, err := ctrl.NewManager(operCfg, ctrl.Options{
			Scheme:                        scheme,
			Metrics:                       metricsserver.Options{BindAddress: "0"},
			LeaderElection:                true,
			LeaderElectionID:              id,
			LeaderElectionNamespace:       operatorNamespace,
			LeaderElectionReleaseOnCancel: release,
			LeaseDuration:                 &d,
			RenewDeadline:                 &r,
			RetryPeriod:                   &rp,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return mgr, cancel, done
	}
	// The crashing replica never releases its Lease (a process that is killed
	// cannot).
	first, kill, firstDone := start(false)
	select {
	case <-first.Elected():
	case err := <-firstDone:
		t.Fatalf("the first replica stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first replica never became leader")
	}
	second, stopSecond, secondDone := start(true)
	defer func() { stopSecond(); <-secondDone }()
	select {
	case <-second.Elected():
		t.Fatal("the second replica became leader while the first holds the Lease")
	case <-time.After(time.Second):
	}
	kill()
	<-firstDone
	killed := time.Now()
	select {
	case <-second.Elected():
		if took := time.Since(killed); took > d+5*time.Second {
			t.Errorf("took over %s after the crash, lease duration %s", took, d)
		}
	case err := <-secondDone:
		t.Fatalf("the second replica stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the second replica did not take over after the first crashed")
	}
	var lease coordinationv1.Lease
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: id}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("lease transitions %v, want the takeover recorded", lease.Spec.LeaseTransitions)
	}
}
