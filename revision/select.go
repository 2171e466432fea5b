package revision

import (
	"cmp"
	"math"
	"slices"
)

// selection counts what selectPods changed.
type selection struct {
	updated, rolledBack, repaired int
}

// selectPods sets each pod's target revision so the partition holds, within the
// maxUnavailable budget when injected containers restart. pods are in name order.
func selectPods(set *ConfigMapSet, pods []podInfo, update string, hubIndex map[string]int) (selection, error) {
	var sel selection
	n := len(pods)
	us := set.Spec.UpdateStrategy
	kept, err := ResolvePartition(us.Partition, n)
	if err != nil {
		return sel, err
	}
	want := n - kept
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
	}
	change := func(p *podInfo, target string) bool {
		if !p.unavailable() {
			if avail <= 0 {
				return false
			}
			avail--
		}
		p.target, p.changed = target, true
		return true
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
		for _, i := range cand {
			if assigned >= want {
				break
			}
			if change(&pods[i], update) {
				assigned++
				sel.updated++
			}
		}
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
		for _, i := range cand {
			if assigned <= want {
				break
			}
			if change(&pods[i], rollbackTo) {
				assigned--
				sel.rolledBack++
			}
		}
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
		if change(p, to) {
			sel.repaired++
		}
	}
	return sel, nil
}

// unavailable reports whether the pod counts against maxUnavailable: not ready, or
// asked for a revision it has not confirmed yet (restarting). A pod without the
// reload sidecar can never confirm a revision, so only readiness counts for it.
func (p *podInfo) unavailable() bool {
	return !p.ready || (p.injected && p.state.UpdateRevision != "" && p.state.UpdateRevision != p.state.CurrentRevision)
}
