package rollout

// Building blocks tested directly by the external tests.
var (
	Generation    = generation
	SortRevisions = sortRevisions
)
