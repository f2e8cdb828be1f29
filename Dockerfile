# The image of compose.yaml's app and worker: the app with the team extra (PostgreSQL, Redis, S3).
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY app app
COPY core core
COPY storage storage
COPY assets assets
# torch first and pinned, as `make run` does (constraints.txt).
RUN pip install --no-cache-dir torch==2.13.0 \
 && pip install --no-cache-dir -c constraints.txt ".[app,team]"
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
