package ranktable

import (
	"github.com/kplan-dev/kplan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// verifiedCM identifies an existing ConfigMap by UID and resourceVersion (which the API
// server changes on every write) together with the desired content it matched.
type verifiedCM struct {
	uid                                   types.UID
	resourceVersion                       string
	filename, content, contHash, podsHash string
}

// desired builds the ConfigMap group ge should have and the action to get there. When
// nothing needs to change the result holds cur itself.
func desired(o Owner, t *Template, ge *groupEntry, cur *corev1.ConfigMap, content, contHash, podsHash string) DesiredConfigMap {
	k := ge.key
	if cur == nil {
		return DesiredConfigMap{Group: k, Action: kplan.ActionCreate, ConfigMap: &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Name: ge.cmName, Namespace: o.Namespace, Labels: map[string]string{LabelComponent: componentValue},
				Annotations:     map[string]string{AnnotationContentHash: contHash, AnnotationPodsHash: podsHash},
				OwnerReferences: []metav1.OwnerReference{ownerRef(o)},
			},
			Data: map[string]string{t.Filename: content},
		}}
	}
	v := verifiedCM{uid: cur.UID, resourceVersion: cur.ResourceVersion, filename: t.Filename,
		content: content, contHash: contHash, podsHash: podsHash}
	if v.resourceVersion != "" && v == ge.verified {
		// The same object version was found up to date for the same desired content.
		return DesiredConfigMap{Group: k, Action: kplan.ActionNone, ConfigMap: cur}
	}
	data, hasData := cur.Data[t.Filename]
	if hasData && len(cur.Data) == 1 && data == content && len(cur.BinaryData) == 0 &&
		cur.Annotations[AnnotationContentHash] == contHash && cur.Annotations[AnnotationPodsHash] == podsHash &&
		cur.Labels[LabelComponent] == componentValue {
		ge.verified = v
		return DesiredConfigMap{Group: k, Action: kplan.ActionNone, ConfigMap: cur}
	}
	up := cur.DeepCopy()
	up.Data = map[string]string{t.Filename: content}
	up.BinaryData = nil
	if up.Labels == nil {
		up.Labels = map[string]string{}
	}
	up.Labels[LabelComponent] = componentValue
	if up.Annotations == nil {
		up.Annotations = map[string]string{}
	}
	up.Annotations[AnnotationContentHash] = contHash
	up.Annotations[AnnotationPodsHash] = podsHash
	return DesiredConfigMap{Group: k, Action: kplan.ActionUpdate, ConfigMap: up}
}
