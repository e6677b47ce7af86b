"""Channel adapters: each speaks one platform's wire protocol and nothing else."""
