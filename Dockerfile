# syntax=docker/dockerfile:1
# The mesh-endpoints image the Helm chart runs by default (charts/mesh-endpoints, image.*).
# Build:  docker build -t ghcr.io/mesh-endpoints/mesh-endpoints:0.1.0 .
# One binary, one subcommand per controller: the chart passes `external-workloads` or
# `service-mirror` and their flags as args.

# Builder: all dependencies, type-check src/, bundle the CLI with every package it uses into
# dist/ (hack/bundle.ts): the runtime needs no node_modules.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY hack/bundle.ts ./hack/
COPY hack/bundle-shims ./hack/bundle-shims
RUN npm run build

# Runtime: distroless Node 20 (no shell, no package manager), as the nonroot user 65532.
# package.json only for the version the CLI reports.
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/dist ./dist
USER 65532:65532
EXPOSE 9990 9999
# The node flags of src/cli/main.ts's first line (why there; src/cli/bundle.test.ts keeps them equal).
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=8", "--interrupt-budget=270336", "/app/dist/cli/main.js"]
