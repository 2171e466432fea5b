package revision

import (
	"cmp"
	"math"
	"slices"
)

// selection counts what selectPods changed, with the numbers the waiting pods'
// messages quote.
type selection struct {
	updated, rolledBack int
	// kept is the partition resolved against the pods; want = pods - kept.
	kept, want int
	// maxUnavailable is the budget resolved against the pods, and unavailable the
	// pods that are unavailable once the plan's changes land; both 0 without
	// restartInjectedContainers.
	maxUnavailable, unavailable int
}

// selectPods sets each pod's target revision so the partition holds, within the
// maxUnavailable budget when injected containers restart. pods are in name order.
func selectPods(set *ConfigMapSet, pods []podInfo, update string, hubIndex map[string]int) (selection, error) {
	var sel selection
	n := len(pods)
	us := set.Spec.UpdateStrategy
	if us.Type == ExternalUpdate {
		// The pods' owner picks them: every pod is to move, none is moved here.
		sel.want = n
		return sel, nil
	}
	kept, err := ResolvePartition(us.Partition, n)
	if err != nil {
		return sel, err
	}
	want := n - kept
	sel.kept, sel.want = kept, want
	current := set.Status.CurrentRevision
	rollbackTo := ""
	if _, ok := hubIndex[current]; ok && current != update {
		rollbackTo = current
	}

	// The budget: how many available pods may be changed now.
	avail := math.MaxInt
	if us.RestartInjectedContainers {
		mu, err := resolveMaxUnavailable(us.MaxUnavailable, n)
		if err != nil {
			return sel, err
		}
		unavailable := 0
		for i := range pods {
			if pods[i].unavailable() {
				unavailable++
			}
		}
		avail = mu - unavailable
		sel.maxUnavailable, sel.unavailable = mu, unavailable
	}
	// refused collects, in the order they were tried, the pods the budget kept from
	// a change; refuse marks the first n of them, the pods that would have changed.
	// A change costs budget when it makes an available pod unavailable, and frees
	// budget when it makes an unavailable pod available again (a pod restarting
	// into another revision sent back to the revision it runs).
	var refused []int
	change := func(i int, target string) bool {
		p := &pods[i]
		switch was, will := p.unavailable(), p.unavailableAt(target); {
		case !was && will:
			if avail <= 0 {
				refused = append(refused, i)
				return false
			}
			avail--
			if us.RestartInjectedContainers {
				sel.unavailable++
			}
		case was && !will && us.RestartInjectedContainers:
			avail++
			sel.unavailable--
		}
		p.target, p.changed = target, true
		return true
	}
	// retry tries the refused pods again, in order, once a change freed budget: they
	// come first in priority order.
	retry := func(try func(i int)) {
		if avail <= 0 || len(refused) == 0 {
			return
		}
		again := slices.Clone(refused)
		refused = refused[:0]
		for _, i := range again {
			try(i)
		}
	}
	refuse := func(n int, target string) {
		for _, i := range refused[:min(max(n, 0), len(refused))] {
			if pods[i].refused == "" {
				pods[i].refused = target
			}
		}
		refused = refused[:0]
	}

	assigned := 0
	warm := make([]int, 0, n)
	for i := range pods {
		if pods[i].target == update {
			assigned++
		}
		if pods[i].cold == coldNone {
			warm = append(warm, i)
		}
	}
	hubLen := len(hubIndex)
	switch {
	case assigned < want:
		cand := make([]int, 0, len(warm))
		for _, i := range warm {
			if pods[i].target != update {
				cand = append(cand, i)
			}
		}
		// By priority class, then in name order (cand is in name order).
		class := make([]int, len(pods))
		for _, i := range cand {
			class[i] = priorityClass(pods[i].target, current, hubIndex, hubLen)
		}
		slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(class[a], class[b]) })
		move := func(i int) {
			if assigned < want && change(i, update) {
				assigned++
				sel.updated++
			}
		}
		for _, i := range cand {
			if assigned >= want {
				break
			}
			move(i)
			retry(move)
		}
		refuse(want-assigned, update)
	case assigned > want && rollbackTo != "":
		cand := make([]int, 0, len(warm))
		for _, i := range warm {
			if pods[i].target == update {
				cand = append(cand, i)
			}
		}
		// Pods that have not confirmed the update yet go back first, each group in
		// reverse name order.
		slices.Reverse(cand)
		confirmed := func(i int) int {
			if pods[i].state.CurrentRevision == update {
				return 1
			}
			return 0
		}
		slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(confirmed(a), confirmed(b)) })
		// No retry: the pods whose change frees budget have not confirmed the
		// update, so they come before every pod the budget can refuse.
		for _, i := range cand {
			if assigned <= want {
				break
			}
			if change(i, rollbackTo) {
				assigned--
				sel.rolledBack++
			}
		}
		refuse(assigned-want, rollbackTo)
	}
	// Kept pods without a usable revision get the old revision, or the update when
	// there is none: a pod cannot run a revision the hub does not hold.
	for _, i := range warm {
		p := &pods[i]
		if _, ok := hubIndex[p.target]; ok {
			continue
		}
		to := rollbackTo
		if to == "" {
			to = update
		}
		if !change(i, to) {
			refuse(1, to)
		}
	}
	return sel, nil
}

// unavailable reports whether the pod counts against maxUnavailable: not ready, or
// asked for a revision it has not confirmed yet (restarting). A pod without the
// reload sidecar can never confirm a revision, so only readiness counts for it.
func (p *podInfo) unavailable() bool {
	return p.unavailableAt(p.state.UpdateRevision)
}

// unavailableAt reports whether the pod would count against maxUnavailable if it
// wanted revision rev.
func (p *podInfo) unavailableAt(rev string) bool {
	return !p.ready || (p.injected && rev != "" && rev != p.state.CurrentRevision)
}
