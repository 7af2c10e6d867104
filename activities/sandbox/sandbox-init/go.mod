module agent-runs/sandbox-init

go 1.23
