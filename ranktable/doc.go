// Package ranktable plans Ascend HCCL rank tables for the pods of a role or group.
//
// It is being built (issue 7); nothing is exported yet.
package ranktable
