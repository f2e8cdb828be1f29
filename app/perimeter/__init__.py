"""The web perimeter: what a request passes before the app sees it.

- :mod:`app.perimeter.http_guard`: sessions (checked against the database), the per-user share
  of Gradio's queue, strict session cookies, the sign-in form;
- :mod:`app.perimeter.sign_in`: sign-in attempts, slowed per name and address, never locked;
- :mod:`app.perimeter.http_body`: request bodies of bounded size, refused before parsing;
- :mod:`app.perimeter.http_origin`: the host names and origins the app answers to;
- :mod:`app.perimeter.uploads`: uploads bounded, and recorded until an import uses them;
- :mod:`app.perimeter.file_gate`: what a file route serves, to whom, whatever the path's spelling;
- :mod:`app.perimeter.private_data`: the data directory and all the app writes there, the app's
  account's alone;
- :mod:`app.perimeter.json_types`: one rule for the type of every value a client sends (REST
  bodies, every Gradio event and endpoint).

:mod:`app.web` assembles them around the REST API and the Gradio app.
"""
