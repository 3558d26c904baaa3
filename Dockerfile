# triage-bot: the Slack bot (Socket Mode or HTTP mode), installed from its built wheel.
# Build: docker build -t triage-bot .     Run with PostgreSQL: docker compose up (see docker-compose.yml)

# 1. build the wheel (the knowledge base and the migrations are package data inside it)
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY triage_bot ./triage_bot
RUN pip wheel --no-deps -w /dist .

# 2. the image: the wheel and its dependencies, no checkout
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRIAGE_DATA_DIR=/data

RUN useradd --create-home --uid 10001 triage && mkdir -p /data && chown triage /data
COPY --from=build /dist /dist
RUN pip install /dist/*.whl && rm -rf /dist
COPY docker/entrypoint.sh /app/entrypoint.sh
RUN chmod 0755 /app/entrypoint.sh

USER triage
WORKDIR /data
EXPOSE 3000
# entrypoint: migrate the database, then serve (Socket Mode when SLACK_APP_TOKEN is set, else HTTP on $PORT)
ENTRYPOINT ["/app/entrypoint.sh"]
