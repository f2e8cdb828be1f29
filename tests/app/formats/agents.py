"""Small agents of each platform, built by hand from the platforms' public documentation of their
export formats (no one's real agent): a few intents with training phrases, a fallback, a
description where the platform has one, and parts the app does not model (responses, entities,
slots, flows, settings), which an export must give back unchanged.

Each builder returns ``(suffix, bytes)``; :data:`EXPECTED` is the rows each one reads as.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from app.formats import Row


def dumps(value: Any) -> bytes:
    """How the test agents are written (what an export writes for a file it changes)."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")


def zipped(files: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, value in files.items():
            zf.writestr(name, value if isinstance(value, bytes) else dumps(value))
    return buf.getvalue()


def unzipped(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


# --- Dialogflow ES -------------------------------------------------------------------------------

ES_ENTITY = {"id": "e1", "name": "card-type", "isOverridable": True, "isEnum": False}


def es_files() -> dict[str, Any]:
    def phrase(pid: str, *parts: dict[str, Any], lang: str = "en") -> dict[str, Any]:
        return {"id": pid, "data": list(parts), "isTemplate": False, "count": 0, "lang": lang}

    return {
        "agent.json": {
            "description": "A demo bank",
            "language": "en",
            "supportedLanguages": ["de"],
            "defaultTimezone": "Europe/Madrid",
            "webhook": {"url": "https://example.invalid/hook", "available": False},
        },
        "package.json": {"version": "1.0.0"},
        "intents/Default Fallback Intent.json": {
            "id": "f0",
            "name": "Default Fallback Intent",
            "fallbackIntent": True,
            "responses": [
                {"action": "input.unknown", "messages": [{"type": "0", "speech": ["Sorry?"]}]}
            ],
        },
        "intents/Default Fallback Intent_usersays_en.json": [
            phrase("n1", {"text": "what is the weather", "userDefined": False})
        ],
        "intents/Default Welcome Intent.json": {
            "id": "w0",
            "name": "Default Welcome Intent",
            "events": [{"name": "WELCOME"}],
            "responses": [{"messages": [{"type": "0", "speech": ["Hi! How can I help?"]}]}],
        },
        "intents/card.lost.json": {
            "id": "c0",
            "name": "card.lost",
            "fallbackIntent": False,
            "responses": [
                {
                    "action": "card.lost",
                    "parameters": [{"name": "card-type", "dataType": "@card-type"}],
                    "messages": [{"type": "0", "speech": ["I have blocked your $card-type."]}],
                }
            ],
        },
        "intents/card.lost_usersays_en.json": [
            phrase(
                "p1",
                {"text": "I lost my ", "userDefined": False},
                {
                    "text": "credit card",
                    "alias": "card-type",
                    "meta": "@card-type",
                    "userDefined": True,
                },
            ),
            phrase("p2", {"text": "my card was stolen", "userDefined": False}),
        ],
        "intents/card.lost_usersays_de.json": [
            phrase("d1", {"text": "Ich habe meine Karte verloren"}, lang="de")
        ],
        "intents/balance.json": {"id": "b0", "name": "balance", "responses": []},
        "intents/balance_usersays_en.json": [phrase("p3", {"text": "how much money do I have"})],
        "entities/card-type.json": ES_ENTITY,
        "entities/card-type_entries_en.json": [
            {"value": "credit card", "synonyms": ["credit card", "visa"]}
        ],
    }


def dialogflow_es() -> tuple[str, bytes]:
    return ".zip", zipped(es_files())


# --- Dialogflow CX -------------------------------------------------------------------------------


def cx_files() -> dict[str, Any]:
    def said(*texts: str) -> dict[str, Any]:
        return {
            "trainingPhrases": [
                {"id": f"t{i}", "parts": [{"text": t}], "repeatCount": 1, "languageCode": "en"}
                for i, t in enumerate(texts)
            ]
        }

    flow = {
        "name": "00000000-0000-0000-0000-000000000000",
        "displayName": "Default Start Flow",
        "transitionRoutes": [{"intent": "card.lost", "targetPage": "Block card"}],
    }
    return {
        "agent.json": {
            "displayName": "Demo bank",
            "defaultLanguageCode": "en",
            "timeZone": "Europe/Madrid",
            "startFlow": "Default Start Flow",
        },
        "flows/Default Start Flow/Default Start Flow.json": flow,
        "flows/Default Start Flow/pages/Block card.json": {
            "displayName": "Block card",
            "entryFulfillment": {"messages": [{"text": {"text": ["I have blocked your card."]}}]},
        },
        "intents/Default Negative Intent/Default Negative Intent.json": {
            "name": "00000000-0000-0000-0000-000000000001",
            "displayName": "Default Negative Intent",
            "priority": 500000,
            "isFallback": True,
        },
        "intents/Default Negative Intent/trainingPhrases/en.json": said("what is the weather"),
        "intents/card.lost/card.lost.json": {
            "name": "3f2e",
            "displayName": "card.lost",
            "priority": 500000,
            "description": "The customer lost a card or had it stolen",
            "parameters": [{"id": "card-type", "entityType": "@card-type"}],
        },
        "intents/card.lost/trainingPhrases/en.json": {
            "trainingPhrases": [
                {
                    "id": "a1",
                    "parts": [
                        {"text": "I lost my "},
                        {"text": "credit card", "parameterId": "card-type"},
                    ],
                    "repeatCount": 1,
                    "languageCode": "en",
                },
                {
                    "id": "a2",
                    "parts": [{"text": "my card was stolen"}],
                    "repeatCount": 1,
                    "languageCode": "en",
                },
            ]
        },
        "intents/card.lost/trainingPhrases/de.json": {
            "trainingPhrases": [
                {
                    "id": "g1",
                    "parts": [{"text": "Ich habe meine Karte verloren"}],
                    "repeatCount": 1,
                    "languageCode": "de",
                }
            ]
        },
        "intents/balance/balance.json": {
            "name": "9a1b",
            "displayName": "balance",
            "priority": 500000,
        },
        "intents/balance/trainingPhrases/en.json": said("how much money do I have"),
        "entityTypes/card-type/card-type.json": {"displayName": "card-type", "kind": "KIND_MAP"},
    }


def dialogflow_cx() -> tuple[str, bytes]:
    return ".zip", zipped(cx_files())


def dialogflow_cx_json() -> tuple[str, bytes]:
    def phrase(*parts: dict[str, Any], lang: str = "en") -> dict[str, Any]:
        return {"parts": list(parts), "repeatCount": 1, "languageCode": lang}

    return ".json", dumps(
        {
            "displayName": "Demo bank",
            "defaultLanguageCode": "en",
            "intents": [
                {
                    "displayName": "Default Negative Intent",
                    "isFallback": True,
                    "trainingPhrases": [phrase({"text": "what is the weather"})],
                },
                {
                    "displayName": "card.lost",
                    "description": "The customer lost a card or had it stolen",
                    "parameters": [{"id": "card-type", "entityType": "@card-type"}],
                    "trainingPhrases": [
                        phrase(
                            {"text": "I lost my "},
                            {"text": "credit card", "parameterId": "card-type"},
                        ),
                        phrase({"text": "my card was stolen"}),
                        phrase({"text": "Ich habe meine Karte verloren"}, lang="de"),
                    ],
                },
                {
                    "displayName": "balance",
                    "trainingPhrases": [phrase({"text": "how much money do I have"})],
                },
            ],
            "flows": [
                {"displayName": "Default Start Flow", "transitionRoutes": [{"intent": "card.lost"}]}
            ],
        }
    )


# --- Amazon Lex V2 -------------------------------------------------------------------------------

LEX_SLOT = {
    "name": "CardType",
    "slotTypeName": "CardTypes",
    "valueElicitationSetting": {
        "slotConstraint": "Required",
        "promptSpecification": {
            "messageGroupsList": [{"message": {"plainTextMessage": {"value": "Which card?"}}}],
            "maxRetries": 2,
        },
    },
}


def lex_files() -> dict[str, Any]:
    at = "DemoBank/BotLocales/en_US/"

    def intent(name: str, *samples: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "identifier": name[:10].upper(),
            "description": None,
            "parentIntentSignature": None,
            "sampleUtterances": [{"utterance": s} for s in samples] or None,
            **extra,
        }

    return {
        "Manifest.json": {
            "metadata": {"schemaVersion": "1", "fileFormat": "LexJson", "resourceType": "Bot"}
        },
        "DemoBank/Bot.json": {
            "name": "DemoBank",
            "version": "DRAFT",
            "dataPrivacy": {"childDirected": False},
            "idleSessionTTLInSeconds": 300,
        },
        at + "BotLocale.json": {
            "name": "English (US)",
            "identifier": "en_US",
            "nluConfidenceThreshold": 0.4,
        },
        at + "Intents/FallbackIntent/Intent.json": {
            **intent("FallbackIntent"),
            "parentIntentSignature": "AMAZON.FallbackIntent",
        },
        at + "Intents/CardLost/Intent.json": intent(
            "CardLost",
            "I lost my {CardType}",
            "my card was stolen",
            description="The customer lost a card or had it stolen",
            slotPriorities=[{"priority": 1, "slotName": "CardType"}],
            intentClosingSetting={
                "closingResponse": {
                    "messageGroupsList": [
                        {"message": {"plainTextMessage": {"value": "Your card is blocked."}}}
                    ]
                }
            },
        ),
        at + "Intents/CardLost/Slots/CardType/Slot.json": LEX_SLOT,
        at + "Intents/Balance/Intent.json": intent("Balance", "how much money do I have"),
        at + "SlotTypes/CardTypes/SlotType.json": {
            "name": "CardTypes",
            "slotTypeValues": [{"sampleValue": {"value": "credit card"}}],
            "valueSelectionSetting": {"resolutionStrategy": "OriginalValue"},
        },
        "DemoBank/BotLocales/de_DE/BotLocale.json": {"name": "German", "identifier": "de_DE"},
        "DemoBank/BotLocales/de_DE/Intents/CardLost/Intent.json": intent(
            "CardLost", "Karte verloren"
        ),
    }


def lex_v2() -> tuple[str, bytes]:
    return ".zip", zipped(lex_files())


# --- Watson Assistant, LUIS, CLU -----------------------------------------------------------------


def watson() -> tuple[str, bytes]:
    return ".json", dumps(
        {
            "name": "Demo bank",
            "language": "en",
            "description": "A demo bank",
            "intents": [
                {
                    "intent": "card_lost",
                    "description": "The customer lost a card or had it stolen",
                    "examples": [
                        {
                            "text": "I lost my credit card",
                            "mentions": [{"entity": "card_type", "location": [10, 21]}],
                        },
                        {"text": "my card was stolen"},
                    ],
                },
                {"intent": "balance", "examples": [{"text": "how much money do I have"}]},
            ],
            "entities": [
                {
                    "entity": "card_type",
                    "values": [{"type": "synonyms", "value": "credit card", "synonyms": ["visa"]}],
                }
            ],
            "counterexamples": [{"text": "what is the weather"}],
            "dialog_nodes": [
                {
                    "dialog_node": "node_1",
                    "conditions": "#card_lost",
                    "output": {
                        "generic": [
                            {
                                "response_type": "text",
                                "values": [{"text": "I have blocked your card."}],
                            }
                        ]
                    },
                }
            ],
            "metadata": {"api_version": {"major_version": "v2", "minor_version": "2018-11-08"}},
            "learning_opt_out": False,
        }
    )


def luis() -> tuple[str, bytes]:
    return ".json", dumps(
        {
            "luis_schema_version": "7.0.0",
            "versionId": "0.1",
            "name": "DemoBank",
            "desc": "A demo bank",
            "culture": "en-us",
            "intents": [
                {"name": "None", "features": []},
                {"name": "CardLost", "features": []},
                {"name": "Balance", "features": []},
            ],
            "entities": [{"name": "CardType", "children": [], "roles": [], "features": []}],
            "utterances": [
                {
                    "text": "I lost my credit card",
                    "intent": "CardLost",
                    "entities": [
                        {"entity": "CardType", "startPos": 10, "endPos": 20, "children": []}
                    ],
                },
                {"text": "my card was stolen", "intent": "CardLost", "entities": []},
                {"text": "how much money do I have", "intent": "Balance", "entities": []},
                {"text": "what is the weather", "intent": "None", "entities": []},
            ],
            "patterns": [{"pattern": "i lost my {CardType}", "intent": "CardLost"}],
            "phraselists": [],
            "settings": [],
        }
    )


def clu() -> tuple[str, bytes]:
    def u(text: str, intent: str, **extra: Any) -> dict[str, Any]:
        return {"text": text, "language": "en-us", "intent": intent, "entities": [], **extra}

    return ".json", dumps(
        {
            "projectFileVersion": "2022-05-01",
            "stringIndexType": "Utf16CodeUnit",
            "metadata": {
                "projectKind": "Conversation",
                "projectName": "DemoBank",
                "multilingual": True,
                "description": "A demo bank",
                "language": "en-us",
                "settings": {"confidenceThreshold": 0.5},
            },
            "assets": {
                "projectKind": "Conversation",
                "intents": [
                    {"category": "None"},
                    {"category": "CardLost"},
                    {"category": "Balance"},
                ],
                "entities": [
                    {
                        "category": "CardType",
                        "compositionSetting": "combineComponents",
                        "list": {
                            "sublists": [
                                {
                                    "listKey": "credit card",
                                    "synonyms": [{"language": "en-us", "values": ["visa"]}],
                                }
                            ]
                        },
                    }
                ],
                "utterances": [
                    {
                        **u("I lost my credit card", "CardLost"),
                        "entities": [{"category": "CardType", "offset": 10, "length": 11}],
                    },
                    u("my card was stolen", "CardLost", dataset="Test"),
                    u("Ich habe meine Karte verloren", "CardLost", language="de"),
                    u("how much money do I have", "Balance", dataset="Train"),
                    u("what is the weather", "None"),
                ],
            },
        }
    )


def _rows(lost: str, balance: str, *, stolen_split: str = "train") -> list[Row]:
    return [
        Row("I lost my credit card", (lost,)),
        Row("my card was stolen", (lost,), stolen_split),
        Row("how much money do I have", (balance,)),
        Row("what is the weather", ("out_of_scope",)),
    ]


BUILDERS = {
    "dialogflow-es": dialogflow_es,
    "dialogflow-cx": dialogflow_cx,
    "dialogflow-cx-json": dialogflow_cx_json,
    "lex-v2": lex_v2,
    "watson": watson,
    "luis": luis,
    "clu": clu,
}
EXPECTED = {
    "dialogflow-es": _rows("card.lost", "balance"),
    "dialogflow-cx": _rows("card.lost", "balance"),
    "dialogflow-cx-json": _rows("card.lost", "balance"),
    # Lex: the slot reference stays in the text; its fallback holds no utterances.
    "lex-v2": [Row("I lost my {CardType}", ("CardLost",)), *_rows("CardLost", "Balance")[1:3]],
    "watson": _rows("card_lost", "balance"),
    "luis": _rows("CardLost", "Balance"),
    "clu": _rows("CardLost", "Balance", stolen_split="test"),
}
DESCRIBED = {"dialogflow-cx", "dialogflow-cx-json", "lex-v2", "watson"}
