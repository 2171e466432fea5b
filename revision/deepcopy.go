package revision

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSet) DeepCopyInto(out *ConfigMapSet) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSet) DeepCopy() *ConfigMapSet {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSet)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ConfigMapSet) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSetList) DeepCopyInto(out *ConfigMapSetList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]ConfigMapSet, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSetList) DeepCopy() *ConfigMapSetList {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSetList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ConfigMapSetList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSetSpec) DeepCopyInto(out *ConfigMapSetSpec) {
	*out = *in
	if in.Selector != nil {
		out.Selector = in.Selector.DeepCopy()
	}
	if in.Data != nil {
		out.Data = make(map[string]string, len(in.Data))
		for k, v := range in.Data {
			out.Data[k] = v
		}
	}
	if in.Containers != nil {
		out.Containers = make([]ContainerInjectSpec, len(in.Containers))
		for i := range in.Containers {
			in.Containers[i].DeepCopyInto(&out.Containers[i])
		}
	}
	if in.RevisionHistoryLimit != nil {
		v := *in.RevisionHistoryLimit
		out.RevisionHistoryLimit = &v
	}
	in.UpdateStrategy.DeepCopyInto(&out.UpdateStrategy)
	out.InjectStrategy = in.InjectStrategy
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSetSpec) DeepCopy() *ConfigMapSetSpec {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSetSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ContainerInjectSpec) DeepCopyInto(out *ContainerInjectSpec) {
	*out = *in
	if in.NameFrom != nil {
		out.NameFrom = in.NameFrom.DeepCopy()
	}
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ContainerInjectSpec) DeepCopy() *ContainerInjectSpec {
	if in == nil {
		return nil
	}
	out := new(ContainerInjectSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ValueFromSource) DeepCopyInto(out *ValueFromSource) {
	*out = *in
	out.FieldRef = corev1.ObjectFieldSelector{APIVersion: in.FieldRef.APIVersion, FieldPath: in.FieldRef.FieldPath}
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ValueFromSource) DeepCopy() *ValueFromSource {
	if in == nil {
		return nil
	}
	out := new(ValueFromSource)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSetUpdateStrategy) DeepCopyInto(out *ConfigMapSetUpdateStrategy) {
	*out = *in
	if in.Partition != nil {
		v := *in.Partition
		out.Partition = &v
	}
	if in.MaxUnavailable != nil {
		v := *in.MaxUnavailable
		out.MaxUnavailable = &v
	}
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSetUpdateStrategy) DeepCopy() *ConfigMapSetUpdateStrategy {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSetUpdateStrategy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSetInjectStrategy) DeepCopyInto(out *ConfigMapSetInjectStrategy) {
	*out = *in
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSetInjectStrategy) DeepCopy() *ConfigMapSetInjectStrategy {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSetInjectStrategy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; out shares nothing with in.
func (in *ConfigMapSetStatus) DeepCopyInto(out *ConfigMapSetStatus) {
	*out = *in
	if in.CollisionCount != nil {
		v := *in.CollisionCount
		out.CollisionCount = &v
	}
	if in.LastContainersTimestamp != nil {
		out.LastContainersTimestamp = in.LastContainersTimestamp.DeepCopy()
	}
	out.Conditions = copyConditions(in.Conditions)
}

// DeepCopy returns a deep copy of in (nil for nil).
func (in *ConfigMapSetStatus) DeepCopy() *ConfigMapSetStatus {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSetStatus)
	in.DeepCopyInto(out)
	return out
}
