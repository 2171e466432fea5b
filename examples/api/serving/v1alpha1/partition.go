package v1alpha1

import (
	"fmt"
	"math/big"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// LatestRatio turns a partition (serving groups, or a share of them, kept on the
// previous revision) into package rollout's Strategy.LatestRatio (replicas moved
// to the target) for a pool in which each of groups serving groups holds unit
// replicas: an integer partition p gives (groups - p) x unit (at least 0), a
// percent p gives 100 - p percent. nil gives nil (every replica moves).
func LatestRatio(partition *intstr.IntOrString, groups, unit int) (*intstr.IntOrString, error) {
	if partition == nil {
		return nil, nil
	}
	if partition.Type == intstr.Int {
		p := int(partition.IntVal)
		if p < 0 {
			return nil, fmt.Errorf("spec.rolloutStrategy.partition: %d is negative", p)
		}
		v := intstr.FromInt(max(groups-p, 0) * unit)
		return &v, nil
	}
	s, ok := strings.CutSuffix(partition.StrVal, "%")
	r, ok2 := new(big.Rat).SetString(s)
	if !ok || !ok2 || r.Sign() < 0 || strings.ContainsAny(s, "eE/+-") {
		return nil, fmt.Errorf("spec.rolloutStrategy.partition: %q is not a percent", partition.StrVal)
	}
	rest := new(big.Rat).Sub(big.NewRat(100, 1), r)
	if rest.Sign() < 0 {
		rest.SetInt64(0)
	}
	digits := 0
	if _, frac, ok := strings.Cut(s, "."); ok {
		digits = len(frac)
	}
	v := intstr.FromString(rest.FloatString(digits) + "%")
	return &v, nil
}
