# syntax=docker/dockerfile:1
# The mesh-endpoints image the Helm chart runs by default (charts/mesh-endpoints, image.*).
# Build:  docker build -t ghcr.io/mesh-endpoints/mesh-endpoints:0.1.0 .
# One binary, one subcommand per controller: the chart passes `external-workloads` or
# `service-mirror` and their flags as args.

# Builder: all dependencies, compile src/ to dist/, then keep production dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY hack/bundle-kubeconfig.ts ./hack/
RUN npm run build \
 && rm -rf dist/testing dist/demo \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime: distroless Node 20 (no shell, no package manager), as the nonroot user 65532.
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
USER 65532:65532
EXPOSE 9990 9999
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
