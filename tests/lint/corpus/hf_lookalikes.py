"""Hugging Face style: BatchEncoding.to() as a statement, a dict of tensors, outputs.loss."""
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def finetune(texts, labels, epochs=1):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.to(device)  # ok: a module
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    for _ in range(epochs):
        for text, label in zip(texts, labels):
            inputs = tokenizer(text, return_tensors="pt")
            inputs.to(device)  # ok: BatchEncoding.to() moves in place
            batch = {k: v.to(device) for k, v in inputs.items()}
            batch["labels"] = torch.tensor([label]).to(device)
            outputs = model(**batch)
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            print("loss", loss.item())  # expect: XB101
            for key in batch:
                print(key)  # ok: the keys are strings


def generate(model, tokenizer, prompt, device):
    inputs = tokenizer(prompt, return_tensors="pt").to(device)
    ids = model.generate(**inputs, max_new_tokens=20)
    return tokenizer.decode(ids[0].tolist())  # ok: no loop
