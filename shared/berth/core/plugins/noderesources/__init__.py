"""kube's noderesources plugins, one package as upstream keeps them: NodeResourcesFit (`fit`) and
NodeResourcesBalancedAllocation (`balancedallocation`), sharing how a node's allocation is read."""
