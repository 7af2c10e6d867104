# syntax=docker/dockerfile:1
# One image for the API (default), the worker and the migration:
#   node dist/api/main.js | node dist/worker/main.js | node dist/bin/migrate.js
# It runs as the non-root user `node` (uid 1000), as the API and the migration should. The worker
# must run as root (compose: `user: root`; the Helm chart: `runAsUser: 0`, in a pod user
# namespace): it starts each sandbox as AGENT_SANDBOX_UID through a uid switch, makes its runs'
# directories that uid's, and makes their cgroups (docs/deploy-kubernetes.md, Privileges).

# --- build: compile TypeScript to dist/ and prebuild the workflow bundle -------------------
# Node 24, the LTS the service supports (package.json `engines`; CI runs on the same major).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The npm 11 of Node 24 reads package.json's `allowScripts`: only the install scripts listed
# there run. The lock file holds every platform's optional packages (CI checks that:
# bin/check-lockfile.sh).
RUN npm ci
COPY . .
# tsc to dist/, then dist/workflow-bundle.js, which production workers load.
RUN npm run build

# --- sandbox-init: the static first program of every sandboxed process (any image, no libc), and the workers' spawn server
FROM golang:1.23-bookworm AS sandbox-init
WORKDIR /src
COPY activities/sandbox/sandbox-init/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /sandbox-init .

# --- runtime: production dependencies, dist/ and docs/ ------------------------------------
FROM node:24-bookworm-slim AS runtime
# Workers clone repositories and run the agent's commands with git and bash, each in a
# bubblewrap sandbox (see docker-compose.yml for what the container needs for user namespaces).
# e2fsprogs and mount: each run's filesystem of AGENT_WORKSPACE_MAX_BYTES (a loop-mounted ext4
# image, AGENT_DISK_LIMITS=enforce). tini: pid 1, which passes SIGTERM on to node (the worker's
# drain) and reaps orphaned processes, also where the orchestrator has no init of its own (Kubernetes).
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap skopeo umoci e2fsprogs mount tini && rm -rf /var/lib/apt/lists/*
# Listening beyond loopback, the API and the workers' metrics servers need METRICS_BEARER_TOKEN
# (they refuse to start without it: docs/operations.md, Metrics).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# The web console's browser files (ES modules and a style sheet), served as written.
COPY api/console/assets ./api/console/assets
COPY --from=sandbox-init /sandbox-init /usr/local/lib/agent-runs/sandbox-init
ENV AGENT_SANDBOX_INIT_PATH=/usr/local/lib/agent-runs/sandbox-init
# The API serves docs/errors.md as the error reference; workers offer the bundled skills.
COPY docs ./docs
COPY bundled-skills ./bundled-skills
# No setuid or setgid program (su, mount, passwd, ...): nothing in the image raises a process's
# privileges (the worker's pod allows privilege escalation, which CAP_SYS_ADMIN requires).
RUN find / -xdev -type f -perm /6000 -exec chmod a-s {} +
# AGENT_RUNS_DATA_DIR (./.data) must be writable by the non-root user.
RUN mkdir -p /app/.data && chown node:node /app/.data
# By number, so that Kubernetes' runAsNonRoot can check it (uid 1000 is the image's `node`).
USER 1000:1000
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/api/main.js"]
