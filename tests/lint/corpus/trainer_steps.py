"""Steps as engines and wrappers write them: an update function whose default output
transform is a lambda that reads the loss, the same transform replaced by one that keeps the
loss on the device, an optimiser wrapper whose step is handed the loss (it runs the
backward), a model named for what it predicts."""


def training_step(model, optimizer, loss_fn, device,
                  output_transform=lambda x, y, y_pred, loss: loss.item()):
    def update(engine, batch):
        x, y = batch[0].to(device), batch[1].to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return output_transform(x, y, None, loss)  # expect: XB101

    return update


def quiet_step(model, optimizer, loss_fn, output_transform=lambda loss: loss.detach()):
    def update(engine, batch):
        loss = loss_fn(model(batch[0].cuda()), batch[1].cuda())
        loss.backward()
        optimizer.step()
        return output_transform(loss)  # ok: the transform keeps it on the device

    return update


class Agent:
    def __init__(self, actor, critic, actor_optim, device):
        self.actor, self.critic = actor.to(device), critic.to(device)
        self.actor_optim = actor_optim

    def learn(self, batch):
        q = self.critic(batch.obs, self.actor(batch.obs))
        actor_loss = -q.mean()
        self.actor_optim.step(actor_loss)  # the wrapper runs the backward and the step
        return {"actor_loss": actor_loss.item()}  # expect: XB101


def rollouts(env, agent, buffer):
    for batch in buffer:
        stats = agent.learn(batch)
        print(stats)  # ok: host floats the step returned


class SpeechTrainer:
    def __init__(self, model, duration_predictor, optimizer, accelerator):
        self.model, self.duration_predictor = model, duration_predictor
        self.optimizer, self.accelerator = optimizer, accelerator

    def train(self, loader):
        for batch in loader:
            duration_loss = self.duration_predictor(batch["mel"])
            print(duration_loss.item())  # expect: XB101
            loss = self.model(batch["text"], batch["mel"])
            self.accelerator.backward(loss)
            self.optimizer.step()
