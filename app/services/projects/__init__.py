"""Projects and the deployment around them: creating and listing projects, their settings, members
and accounts, import/export of utterances, model bundles, reports, downloads and backups. A top
floor: it may import every lower package (labelling, models, design, queue), never
:mod:`app.services.training`."""
